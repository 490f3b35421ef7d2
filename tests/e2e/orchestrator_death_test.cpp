// End-to-end: the prune contract and the orchestrator's death, with the real dlsweep and a
// protocol-speaking Python trial. A trial asked to stop ends in the state of the ask even
// when the script just breaks out of its loop and exits 0; a closed pipe or a hung-up
// terminal never stops a sweep; resume after a kill -9 just after a trial finished never
// runs that attempt again, and no metric row is recorded twice.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/shell_quote.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using dlsweep::shell_quote;

namespace {

// Counts its launches in launches.txt; reports val_acc at 4 evaluations (`acc` param: the
// first value), then a final record. It stops on control.json the way the README's loop
// does (break, then exit 0). No trial waits for time, only for conditions:
//   wait_stop_below: a trial whose value is below it waits, after each evaluation, for
//     dlsweep's stop request (a pruned trial, whose ask must not race its exit);
//   gate: before its final record it waits for the file "go" in the study folder, which the
//     test creates once it has done what it tests (closed the pipe, hung up);
//   kill_parent: after its final record, trial 0 kill -9s the orchestrator (its parent) and
//     waits until it is gone — the death "just after a trial finished".
const char* kTrial = R"(import json, os, sys, time
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
with open(os.path.join(d, "launches.txt"), "a") as f:
    f.write("launch\n")
def stop_asked():
    try:
        return json.load(open(os.path.join(d, "control.json"))).get("action") == "stop"
    except (OSError, ValueError):
        return False
def wait_until(cond):
    deadline = time.time() + 120  # bounds a hang only
    while not cond() and time.time() < deadline:
        time.sleep(0.01)
out = open(os.path.join(d, "metrics.jsonl"), "a")
def rec(seq, kind, step, acc):
    out.write(json.dumps({"seq": seq, "kind": kind, "step": step, "epoch": seq + 1, "samples": step * 32,
                          "wall_s": 0.1 * (seq + 1), "metrics": {"val_acc": acc}}) + "\n")
    out.flush()
acc = p["acc"]
for i in range(4):
    rec(i, "eval", 256 * (i + 1), acc + 0.01 * i)
    if acc < p.get("wait_stop_below", -1):
        wait_until(stop_asked)
    if stop_asked():
        break
else:
    if p.get("gate") == 1:
        wait_until(lambda: os.path.exists(os.path.join(os.path.dirname(d), "..", "..", "go")))
    rec(4, "final", 1280, acc + 0.04)
    if p.get("kill_parent") == 1 and os.environ.get("DLSWEEP_TRIAL_ID") == "0":
        parent = os.getppid()
        os.kill(parent, 9)
        wait_until(lambda: os.getppid() != parent)
sys.exit(0)
)";

std::string study(const std::string& name, const std::string& space, const std::string& extra = "",
                  int concurrent = 2) {
  return "name: " + name + "\nbackend: {kind: local, max_concurrent: " + std::to_string(concurrent) + R"(}
trial:
  command: [python3, "{study_dir}/trial.py"]
  max_retries: 2
objective: {metric: val_acc, mode: max, target: 0.8}
search: {algorithm: grid}
space:
)" + space + "\n" + extra;
}

fs::path setup(const std::string& name, const std::string& yaml) {
  auto dir = fresh_dir(name);
  std::ofstream(dir / "trial.py") << kTrial;
  std::ofstream(dir / "study.yaml") << yaml << "runs_dir: " << (dir / "runs").string() << "\n";
  return dir;
}

json results(const fs::path& db, const std::string& name, const fs::path& dir) {
  auto r = run_dlsweep(db, {"results", name, "--format", "json"}, dir);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

int launches(const fs::path& dir, const std::string& study, int n) {
  std::ifstream in(dir / "runs" / study / fmt::format("trial-{:04d}", n) / "launches.txt");
  int k = 0;
  std::string line;
  while (std::getline(in, line)) k += !line.empty();
  return k;
}

/// Metric rows recorded more than once for the same (trial, attempt, kind, step, name).
std::string duplicate_rows(const fs::path& db, const fs::path& dir) {
  auto q = run_dlsweep(db, {"query",
                            "SELECT trial_id, attempt, kind, step, name, COUNT(*) AS c FROM metrics "
                            "GROUP BY trial_id, attempt, kind, step, name HAVING c > 1",
                            "--format", "csv"},
                       dir);
  REQUIRE(q.exit_code == 0);
  auto nl = q.out.find('\n');
  return nl == std::string::npos ? "" : q.out.substr(nl + 1);
}

}  // namespace

TEST_CASE("e2e asked: a pruned script that breaks out of its loop and exits 0 is PRUNED, never best") {
  // Trial 0 stays at 0.1, below the threshold pruner's 0.3 after warmup: asked to stop, it
  // breaks and exits 0 as the README's loop does. Trial 1 (0.85) completes.
  auto dir = setup("ask-exit0", study("ask-exit0", "  acc: [0.1, 0.85]\n  wait_stop_below: [0.3]",
                                      "pruner: {kind: threshold, lower: 0.3, by: step}\n"));
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto j = results(db, "ask-exit0", dir);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["state"] == "PRUNED");
  CHECK(j[0]["attempt"] == 0);  // never retried
  CHECK(j[1]["state"] == "COMPLETE");
  CHECK(launches(dir, "ask-exit0", 0) == 1);
  auto best = run_dlsweep(db, {"best", "ask-exit0", "--by", "value", "--format", "json"}, dir);
  REQUIRE(best.exit_code == 0);
  CHECK(json::parse(best.out)["trial"] == 1);
  CHECK(r.err.find("1 complete, 1 pruned") != std::string::npos);
  // status: each trial's last value and its best; the pruned trial's 0.1 is both.
  auto st = run_dlsweep(db, {"status", "ask-exit0", "--format", "json"}, dir);
  REQUIRE(st.exit_code == 0);
  auto sj = json::parse(st.out);
  REQUIRE(sj.size() == 2);
  CHECK(sj[1]["best"].get<double>() == Approx(0.89));
  CHECK(sj[1]["val_acc"].get<double>() == Approx(0.89));
}

TEST_CASE("e2e death: a closed pipe (submit | head) does not stop the sweep") {
  auto dir = setup("sigpipe", study("sigpipe", "  acc: [0.5, 0.6, 0.7, 0.8]\n  gate: [1]"));
  auto db = dir / "sweep.db";
  // head exits after the first line; only then does the reader create "go", which lets the
  // trials finish: every event of their ends meets EPIPE.
  std::string cmd = fmt::format("cd {} && {} --db {} submit study.yaml 2>&1 | {{ head -1 >/dev/null; touch go; }}; "
                                "echo \"rc=${{PIPESTATUS[0]}}\"",
                                shell_quote(dir.string()), shell_quote(DLSWEEP_BIN), shell_quote(db.string()));
  auto r = run_command({"bash", "-c", cmd});
  INFO(r.out << r.err);
  CHECK(r.out.find("rc=0") != std::string::npos);
  auto j = results(db, "sigpipe", dir);
  REQUIRE(j.size() == 4);
  for (const auto& t : j) CHECK(t["state"] == "COMPLETE");
  // The whole story is in the study's log.
  std::ifstream log(dir / "runs" / "sigpipe" / "orchestrator.log");
  std::stringstream ss;
  ss << log.rdbuf();
  CHECK(ss.str().find("study sigpipe finished") != std::string::npos);
}

TEST_CASE("e2e death: SIGHUP (a closed ssh session) does not stop the sweep") {
  auto dir = setup("sighup", study("sighup", "  acc: [0.5, 0.6, 0.7]\n  gate: [1]"));
  auto db = dir / "sweep.db";
  int pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"});
  REQUIRE(pid > 0);
  // Once the first trial is running (its trials wait for "go"), hang up, then let them finish.
  REQUIRE(wait_for(dir / "runs" / "sighup" / "trial-0000" / "launches.txt"));
  ::kill(pid, SIGHUP);
  std::ofstream(dir / "go") << "";
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  auto j = results(db, "sighup", dir);
  REQUIRE(j.size() == 3);
  for (const auto& t : j) CHECK(t["state"] == "COMPLETE");
}

TEST_CASE("e2e death: kill -9 just after a trial finished; resume never runs that attempt again") {
  // One trial at a time: trial 0 writes its final record, then kills the orchestrator
  // before it can see the exit. Resume must record trial 0 from its files and run trial 1.
  auto dir = setup("kill9", study("kill9", "  acc: [0.6, 0.7]\n  kill_parent: [1]", "", 1));
  auto db = dir / "sweep.db";
  auto first = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(first.exit_code == 128 + SIGKILL);
  auto before = results(db, "kill9", dir);
  REQUIRE(before.size() == 1);
  CHECK(before[0]["state"] == "RUNNING");  // what the dead orchestrator left

  auto resumed = run_dlsweep(db, {"resume", "kill9"}, dir);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("1 had finished unwatched") != std::string::npos);
  CHECK(launches(dir, "kill9", 0) == 1);
  CHECK(launches(dir, "kill9", 1) == 1);
  auto j = results(db, "kill9", dir);
  REQUIRE(j.size() == 2);
  for (const auto& t : j) {
    CHECK(t["state"] == "COMPLETE");
    CHECK(t["attempt"] == 0);
  }
  CHECK(duplicate_rows(db, dir).empty());
}

namespace {

// A PBT member as a user program writes it: resumes from checkpoints/state.json (the engine
// copies the parent's), reports one evaluation per epoch up to DLSWEEP_STOP_AT and exits
// there without a final record, as a loop on dt.should_stop() does. Trial 2 (generation 1)
// kill -9s the orchestrator right after its interval's last record and checkpoint.
const char* kPbtTrial = R"(import json, os, sys, time
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
with open(os.path.join(d, "launches.txt"), "a") as f:
    f.write("launch\n")
stop = float(os.environ["DLSWEEP_STOP_AT"].split(":")[1])
ck = os.path.join(d, "checkpoints")
os.makedirs(ck, exist_ok=True)
try:
    epoch = json.load(open(os.path.join(ck, "state.json")))["epoch"]
except (OSError, ValueError):
    epoch = 0
try:
    seq = sum(1 for _ in open(os.path.join(d, "metrics.jsonl")))
except OSError:
    seq = 0
out = open(os.path.join(d, "metrics.jsonl"), "a")
while epoch < stop:
    epoch += 1
    out.write(json.dumps({"seq": seq, "kind": "eval", "step": 10 * epoch, "epoch": epoch, "samples": 320 * epoch,
                          "wall_s": 0.1 * epoch, "metrics": {"val_acc": 0.1 * epoch + 0.01 * p["x"]}}) + "\n")
    out.flush()
    seq += 1
    json.dump({"epoch": epoch}, open(os.path.join(ck, "state.json"), "w"))
if os.environ.get("DLSWEEP_TRIAL_ID") == "2" and not os.path.exists(os.path.join(d, "killed")):
    open(os.path.join(d, "killed"), "w").close()
    parent = os.getppid()
    os.kill(parent, 9)
    deadline = time.time() + 120  # bounds a hang only
    while os.getppid() == parent and time.time() < deadline:
        time.sleep(0.01)
sys.exit(0)
)";

}  // namespace

TEST_CASE("e2e death: kill -9 as a PBT member ends its interval; resume records it, never trains past the interval") {
  // Without this, resume requeued trial 2 (no final record), and the rerun resumed from the
  // interval-end checkpoint and reported epoch 3 inside the interval [1, 2).
  auto dir = fresh_dir("pbt-kill9");
  std::ofstream(dir / "trial.py") << kPbtTrial;
  std::ofstream(dir / "study.yaml") << R"(name: pbt-kill9
backend: {kind: local, max_concurrent: 1}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: val_acc, mode: max}
search: {algorithm: pbt, seed: 3, population: 2, generations: 2, interval: {by: epoch, every: 1}, perturb: {x: [0.5, 2]}}
space:
  x: {uniform: [1, 5]}
runs_dir: )" << (dir / "runs").string()
                                    << "\n";
  auto db = dir / "sweep.db";
  auto first = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(first.exit_code == 128 + SIGKILL);
  auto resumed = run_dlsweep(db, {"resume", "pbt-kill9"}, dir);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.err.find("its records on disk reach its interval's end") != std::string::npos);
  CHECK(resumed.err.find("1 had finished unwatched") != std::string::npos);
  CHECK(launches(dir, "pbt-kill9", 2) == 1);  // never relaunched
  auto j = results(db, "pbt-kill9", dir);
  REQUIRE(j.size() == 4);
  for (const auto& t : j) CHECK(t["state"] == "COMPLETE");
  // Trial 2's last evaluation is at its interval's end (epoch 2), not past it.
  auto q = run_dlsweep(db, {"query",
                            "SELECT MAX(m.epoch) AS e FROM metrics m JOIN trials t ON t.id = m.trial_id "
                            "WHERE t.number = 2 AND m.kind = 'eval'",
                            "--format", "csv"},
                       dir);
  REQUIRE(q.exit_code == 0);
  CHECK(q.out.find("\n2") != std::string::npos);
  CHECK(q.out.find("\n3") == std::string::npos);
  CHECK(duplicate_rows(db, dir).empty());
}
