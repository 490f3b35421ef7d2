// End-to-end "honest outcomes": the real dlsweep on small studies of a protocol-speaking
// Python script (what users plug in). Each case was once reported wrong: a diverged or
// crashed trial recommended as best, a clean exit without the objective counted COMPLETE,
// deterministic failures retried, unknown trial numbers "cancelled", Ctrl-C holes never
// filled, tables wider than the terminal.
#include <catch2/catch.hpp>

#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One protocol-speaking trial; its `case` param picks what it does:
//   diverge: val_acc 0.99 at 1 s, then exit 3   slow: 0.90 at 5 s, exit 0   fast: 0.89 at 3 s, exit 0
//   noobj:   reports acc and loss only, exit 0   crash: a long error on stderr, exit 1
const char* kTrial = R"(import json, os, sys
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
open(os.path.join(d, "trial_id.txt"), "w").write(os.environ["DLSWEEP_TRIAL_ID"])
acc, t = {"diverge": (0.99, 1.0), "slow": (0.90, 5.0), "fast": (0.89, 3.0)}.get(p["case"], (0.5, 1.0))
name = "acc" if p["case"] == "noobj" else "val_acc"
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "eval", "step": 10, "epoch": 1, "samples": 640, "wall_s": t,
                          "metrics": {name: acc, "loss": 0.3}}) + "\n")
    if p["case"] not in ("diverge", "crash"):
        out.write(json.dumps({"seq": 1, "kind": "final", "step": 20, "epoch": 2, "samples": 1280, "wall_s": t + 1,
                              "metrics": {name: acc, "loss": 0.2}}) + "\n")
if p["case"] == "diverge":
    sys.exit(3)
if p["case"] == "crash":
    sys.stderr.write("Traceback: RuntimeError: " + "a very long explanation " * 12 + "\n")
    sys.exit(1)
)";

std::string study(const std::string& name, const std::string& cases, int retries = 2, const std::string& extra = "") {
  return "name: " + name + R"(
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
  max_retries: )" + std::to_string(retries) + R"(
objective: {metric: val_acc, mode: max, target: 0.88}
search: {algorithm: grid}
space:
  case: )" + cases + "\n" + extra;
}

fs::path setup(const std::string& name, const std::string& yaml) {
  auto dir = fresh_dir(name);
  write(dir / "trial.py", kTrial);
  write(dir / "study.yaml", yaml);
  return dir;
}

json results(const fs::path& db, const std::string& name, const fs::path& dir) {
  auto r = run_dlsweep(db, {"results", name, "--format", "json"}, dir);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("e2e honest: a trial that reached the target and diverged is FAILED, not retried, never the best") {
  // Trial 0 reaches 0.99 at 1 s, then diverges; trials 1 and 2 complete (0.90 at 5 s, 0.89 at 3 s).
  auto dir = setup("diverge", study("h-diverge", "[diverge, slow, fast]"));
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The progress line's best is a COMPLETE trial's value, never the diverged 0.99.
  CHECK(r.err.find("best val_acc 0.99") == std::string::npos);

  auto j = results(db, "h-diverge", dir);
  REQUIRE(j.size() == 3);
  CHECK(j[0]["state"] == "FAILED");
  CHECK(j[0]["attempt"] == 0);  // exit 3 is deterministic: not retried
  CHECK(j[0]["message"].get<std::string>().find("diverged") != std::string::npos);
  CHECK(j[0]["message"].get<std::string>().find("not retried") != std::string::npos);

  auto best = run_dlsweep(db, {"best", "h-diverge", "--format", "json"}, dir);
  REQUIRE(best.exit_code == 0);
  auto b = json::parse(best.out);
  CHECK(b["trial"] == 2);  // 0.89 at 3 s beats 0.90 at 5 s by time-to-target
  CHECK(b["left_out"]["FAILED"] == 1);
  auto text = run_dlsweep(db, {"best", "h-diverge"}, dir);
  CHECK(text.out.find("left out: 1 FAILED") != std::string::npos);

  // --by value: the highest COMPLETE value, and it knows 2 trials reached the target.
  auto by_value = run_dlsweep(db, {"best", "h-diverge", "--by", "value"}, dir);
  REQUIRE(by_value.exit_code == 0);
  CHECK(by_value.out.find("trial 1") != std::string::npos);
  CHECK(by_value.out.find("no complete trial reached") == std::string::npos);
  CHECK(by_value.out.find("2 of 2 complete trials reached the target 0.88") != std::string::npos);

  // DLSWEEP_TRIAL_ID is the trial number (database ids start at 1).
  for (int n = 0; n < 3; ++n)
    CHECK(slurp(dir / "dlsweep-runs" / "h-diverge" / ("trial-000" + std::to_string(n)) / "trial_id.txt") == std::to_string(n));

  // cancel: an unknown number is an error; a finished trial is left alone.
  auto unknown = run_dlsweep(db, {"cancel", "h-diverge", "--trial", "99"}, dir);
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("no trial 99 in study h-diverge") != std::string::npos);
  auto done = run_dlsweep(db, {"cancel", "h-diverge", "--trial", "1"}, dir);
  CHECK(done.exit_code == 0);
  CHECK(done.err.find("trial 1 is already COMPLETE") != std::string::npos);
  CHECK(done.err.find("cancelled 0 trials") != std::string::npos);
}

TEST_CASE("e2e honest: every trial crashed: submit and best exit 3, best names no trial") {
  auto dir = setup("crashed", study("h-crashed", "[crash, diverge]", /*retries=*/0));
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("no trial completed") != std::string::npos);
  auto best = run_dlsweep(db, {"best", "h-crashed"}, dir);
  CHECK(best.exit_code == 3);
  CHECK(best.out.empty());
  CHECK(best.err.find("nothing to recommend: no trial completed") != std::string::npos);
  CHECK(best.err.find("left out: 2 FAILED") != std::string::npos);
  CHECK(best.err.find("yet") == std::string::npos);  // the study is finished
}

TEST_CASE("e2e honest: exit 0 without the objective metric is FAILED, and submit says why") {
  auto dir = setup("noobj", study("h-noobj", "[noobj]"));
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("objective val_acc was never reported (it reported: acc, loss)") != std::string::npos);
  auto j = results(db, "h-noobj", dir);
  REQUIRE(j.size() == 1);
  CHECK(j[0]["state"] == "FAILED");
  CHECK(j[0]["attempt"] == 0);  // the same program reports the same metrics: not retried
  auto best = run_dlsweep(db, {"best", "h-noobj"}, dir);
  CHECK(best.exit_code == 3);
  CHECK(best.err.find("no trial has a value") == std::string::npos);
}

TEST_CASE("e2e honest: a missing program or script is not retried") {
  auto dir = fresh_dir("missing");
  write(dir / "program.yaml", R"(
name: h-noprog
backend: {kind: local, max_concurrent: 1}
trial: {command: [/nonexistent/train], max_retries: 3}
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1]}
)");
  write(dir / "script.yaml", R"(
name: h-noscript
backend: {kind: local, max_concurrent: 1}
trial: {command: [/bin/sh, "{study_dir}/missing.sh"], max_retries: 3}
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1]}
)");
  auto db = dir / "sweep.db";
  for (const char* name : {"program", "script"}) {
    auto r = run_dlsweep(db, {"submit", std::string(name) + ".yaml"}, dir);
    INFO(name << ": " << r.err);
    CHECK(r.exit_code == 3);
  }
  auto q = run_dlsweep(db, {"query", "SELECT number, state, attempt FROM trials ORDER BY id", "--format", "csv"}, dir);
  CHECK(q.out == "number,state,attempt\n0,FAILED,0\n0,FAILED,0\n");
  auto msgs = run_dlsweep(db, {"query", "SELECT message FROM trials ORDER BY id", "--format", "csv"}, dir);
  CHECK(msgs.out.find("cannot start '/nonexistent/train'") != std::string::npos);  // spawn failed
  CHECK(msgs.out.find("a missing script") != std::string::npos);  // sh: can't open missing.sh (exit 2)
  CHECK(msgs.out.find("not retried") != std::string::npos);
}

TEST_CASE("e2e honest: Ctrl-C leaves cancelled holes; resume --rerun cancelled fills them") {
  auto dir = fresh_dir("rerun");
  // Until the file `fast` exists, every trial announces itself on the FIFO `started` and
  // blocks until it is cancelled; once `fast` exists, it reports and exits 0.
  write(dir / "study.yaml", R"(
name: h-rerun
backend: {kind: local, max_concurrent: 2}
trial:
  command:
    - /bin/sh
    - -c
    - |
      if [ -e "$0" ]; then
        echo '{"seq":0,"kind":"final","step":1,"metrics":{"loss":1}}' >> metrics.jsonl
        exit 0
      fi
      echo "$$" > "$1"
      exec tail -f /dev/null
    - "{study_dir}/fast"
    - "{study_dir}/started"
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1, 2, 3]}
)");
  auto db = dir / "sweep.db";
  // Opened read-write, the FIFO never reports end-of-file between writers, and a writer's
  // open never blocks: the test waits on the trials' own announcements, not on a clock.
  REQUIRE(::mkfifo((dir / "started").c_str(), 0600) == 0);
  const int started = ::open((dir / "started").c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(started >= 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen((dir / "submit.err").c_str(), "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "study.yaml", (char*)nullptr);
    ::_exit(127);
  }
  auto runs = dir / "dlsweep-runs" / "h-rerun";
  int lines = 0;
  while (lines < 2) {  // both running trials have started (the ctest timeout bounds a hang)
    pollfd pfd{started, POLLIN, 0};
    REQUIRE(::poll(&pfd, 1, -1) == 1);
    char buf[256];
    const ssize_t n = ::read(started, buf, sizeof buf);
    REQUIRE(n > 0);
    lines += static_cast<int>(std::count(buf, buf + n, '\n'));
  }
  ::close(started);
  // While the orchestrator runs: trial 2 is not sampled yet (2 at a time), trial 7 never
  // will be. Neither can be cancelled, and nothing is asked of the orchestrator.
  for (const char* n : {"2", "7"}) {
    auto c = run_dlsweep(db, {"cancel", "h-rerun", "--trial", n}, dir);
    CHECK(c.exit_code == 2);
    CHECK(c.err.find(std::string("no trial ") + n + " in study h-rerun") != std::string::npos);
    CHECK(c.err.find("not sampled yet") != std::string::npos);
    CHECK_FALSE(fs::exists(runs / "cancel-request"));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(slurp(dir / "submit.err").find("resume h-rerun --rerun cancelled") != std::string::npos);

  // Without --rerun the holes stay; with it, they run again as new attempts.
  write(dir / "fast", "");
  auto bad = run_dlsweep(db, {"resume", "h-rerun", "--rerun", "complete"}, dir);
  CHECK(bad.exit_code == 2);
  auto r = run_dlsweep(db, {"resume", "h-rerun", "--rerun", "cancelled"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("2 trials re-run") != std::string::npos);
  auto q = run_dlsweep(db, {"query", "SELECT number, state, attempt FROM trials ORDER BY number", "--format", "csv"}, dir);
  CHECK(q.out == "number,state,attempt\n0,COMPLETE,1\n1,COMPLETE,1\n2,COMPLETE,0\n");
  auto ev = run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events WHERE from_state='CANCELLED' AND to_state='WAITING'",
                             "--format", "csv"}, dir);
  CHECK(ev.out == "COUNT(*)\n2\n");
}

TEST_CASE("e2e honest: results fit 100 columns; a parameter named state does not collide") {
  // `state` varies (a table shows the parameters that vary), beside the fixed column `state`.
  std::string yaml = study("h-width", "[crash, fast]", 0);
  yaml.replace(yaml.find("space:\n"), 7, "space:\n  state: [idle, busy]\n");
  auto dir = setup("width", yaml);
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto table = run_command({DLSWEEP_BIN, "--db", db.string(), "results", "h-width"}, dir, {"COLUMNS=100"});
  REQUIRE(table.exit_code == 0);
  INFO(table.out);
  std::istringstream lines(table.out);
  std::string line;
  std::getline(lines, line);
  CHECK(line.find("params.state") != std::string::npos);
  CHECK(line.find("  state  ") != std::string::npos);
  do CHECK(line.size() <= 100);
  while (std::getline(lines, line));
  CHECK(table.out.find("...") != std::string::npos);  // the long stderr message was shortened
  // CSV keeps the whole message.
  auto csv = run_command({DLSWEEP_BIN, "--db", db.string(), "results", "h-width", "--format", "csv"}, dir,
                         {"COLUMNS=100"});
  CHECK(csv.out.find(std::string("a very long explanation ") + "a very long explanation ") != std::string::npos);
}
