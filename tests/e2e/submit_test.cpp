// End-to-end tests of `dlsweep submit` and the read verbs with the real binaries, real
// child processes, a real SQLite file and the real Fashion-MNIST data (a subset).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <vector>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/shell_quote.hpp"
#include "db/storage.hpp"
#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

static void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

static const char* kSmallStudy = R"(
name: e2e-small
backend: {kind: local, max_concurrent: 2}
trial:
  trainer: {model: mlp, hidden: [64], epochs: 2, train_subset: 4000, test_subset: 1000, threads: 1}
objective: {metric: val_acc, mode: max, target: 0.5}
search: {algorithm: grid}
space:
  batch_size: [64, 256]
  lr_rule: [linear, sqrt]
fixed: {base_batch: 64, base_lr: 0.05, momentum: 0.9}
)";

TEST_CASE("submit runs a real sweep on Fashion-MNIST and the read verbs report it") {
  auto dir = fresh_dir("small");
  write(dir / "study.yaml", kSmallStudy);
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  auto storage = dlsweep::db::Storage::open_readonly(db);
  REQUIRE(storage.has_value());
  auto study = (*storage)->find_study("e2e-small");
  REQUIRE(study.has_value());
  REQUIRE(study->has_value());
  CHECK((*study)->state == "FINISHED");
  auto trials = (*storage)->list_trials((*study)->id);
  REQUIRE(trials.has_value());
  REQUIRE(trials->size() == 4);
  for (const auto& t : *trials) {
    CHECK(t.state == dlsweep::TrialState::complete);
    CHECK(fs::exists(fs::path(t.trial_dir) / "params.json"));
    CHECK(fs::exists(fs::path(t.trial_dir) / "metrics.jsonl"));
  }
  // Every trial went WAITING -> QUEUED -> RUNNING -> COMPLETE, recorded as events.
  auto events = (*storage)->events((*study)->id);
  REQUIRE(events.has_value());
  for (const auto& t : *trials) {
    std::vector<std::string> path;
    for (const auto& e : *events)
      if (e.trial_id && *e.trial_id == t.id && e.kind == "transition") path.push_back(e.to_state);
    CHECK(path == std::vector<std::string>{"QUEUED", "RUNNING", "COMPLETE"});
  }
  // Two evals (epochs 1 and 2) and one final record per trial reached the metrics table.
  auto counts = (*storage)->query(
      "SELECT trial_id, COUNT(DISTINCT seq) FROM metrics WHERE name='val_acc' GROUP BY trial_id");
  REQUIRE(counts.has_value());
  REQUIRE(counts->rows.size() == 4);
  for (const auto& row : counts->rows) CHECK(row[1].get<int>() == 3);

  auto res = run_dlsweep(db, {"results", "e2e-small", "--format", "json"}, dir);
  REQUIRE(res.exit_code == 0);
  auto j = json::parse(res.out);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 4);
  std::set<std::pair<int, std::string>> grid;
  for (const auto& t : j) {
    for (const char* key : {"trial", "state", "params", "value", "steps_to_target", "time_to_target_s", "samples_per_s"})
      CHECK(t.contains(key));
    CHECK(t["state"] == "COMPLETE");
    CHECK(t["value"].get<double>() > 0.5);  // 4000 images, 2 epochs: well above chance (0.1)
    CHECK(t["value"].get<double>() <= 1.0);
    CHECK(t["samples_per_s"].get<double>() > 0);
    REQUIRE(t["steps_to_target"].is_number());  // target 0.5 is reached in the first epoch
    CHECK(t["time_to_target_s"].get<double>() > 0);
    grid.insert({t["params"]["batch_size"].get<int>(), t["params"]["lr_rule"].get<std::string>()});
  }
  CHECK(grid.size() == 4);

  auto status = run_dlsweep(db, {"status"}, dir);
  CHECK(status.exit_code == 0);
  CHECK(status.out.find("e2e-small") != std::string::npos);

  auto best = run_dlsweep(db, {"best", "e2e-small", "--format", "json"}, dir);
  REQUIRE(best.exit_code == 0);
  const auto b = json::parse(best.out);
  CHECK(b["criterion"] == "time-to-target");
  // Pooled time: the two lr rules of the winner's batch size train at one speed and both
  // reach the target at the first eval (the same step), so the pooled time is the median
  // (mean) of their two clock readings.
  std::vector<double> same_speed;
  std::set<std::int64_t> steps;
  for (const auto& t : j)
    if (t["params"]["batch_size"] == b["params"]["batch_size"]) {
      same_speed.push_back(t["time_to_target_s"].get<double>());
      steps.insert(t["steps_to_target"].get<std::int64_t>());
    }
  REQUIRE(same_speed.size() == 2);
  CHECK(b["pooled_trials"] == 2);
  if (steps.size() == 1)  // both at the first eval, as expected (else only the count is checked)
    CHECK(b["time_to_target_pooled_s"].get<double>() == Approx((same_speed[0] + same_speed[1]) / 2).epsilon(1e-9));

  auto csv = run_dlsweep(db, {"query", "SELECT state, COUNT(*) AS n FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(csv.exit_code == 0);
  CHECK(csv.out == "state,n\nCOMPLETE,4\n");

  // The database is read-only for `query`.
  auto del = run_dlsweep(db, {"query", "DELETE FROM trials"}, dir);
  CHECK(del.exit_code == 2);
  CHECK(del.err.find("read-only") != std::string::npos);
  CHECK(run_dlsweep(db, {"query", "SELECT COUNT(*) FROM trials", "--format", "csv"}, dir).out == "COUNT(*)\n4\n");

  // A second submit of the same study name is refused without touching anything.
  auto again = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(again.exit_code == 2);
}

TEST_CASE("an invalid study leaves no trace in the database") {
  auto dir = fresh_dir("invalid");
  write(dir / "bad.yaml", "name: bad\ntrial: {trainer: {epochs: 1}}\nobjective: {metric: val_acc, mode: maximise}\nspace: {batch_size: [0]}\n");
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "bad.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("objective.mode") != std::string::npos);
  CHECK(r.err.find("nothing was recorded") != std::string::npos);
  CHECK_FALSE(fs::exists(db));
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs"));
}

TEST_CASE("resume --as-job of a local study is refused before anything is written (its place, its budget)") {
  auto dir = fresh_dir("resume-as-job-local");
  write(dir / "s.yaml", R"(name: local-as-job
backend: {kind: local, max_concurrent: 1}
trial:
  command: [/bin/sh, -c, "echo '{\"seq\":0,\"kind\":\"final\",\"metrics\":{\"loss\":1}}' >> metrics.jsonl"]
objective: {metric: loss, mode: min}
search: {algorithm: random, trials: 1, seed: 1}
space: {x: {uniform: [0, 1]}}
)");
  auto db = dir / "sweep.db";
  REQUIRE(run_dlsweep(db, {"submit", "s.yaml"}, dir).exit_code == 0);
  const auto events_before = run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events", "--format", "csv"}, dir).out;
  const auto spec_before = run_dlsweep(db, {"query", "SELECT spec_json FROM studies", "--format", "csv"}, dir).out;
  auto r = run_dlsweep(db, {"resume", "local-as-job", "--as-job", "--add-trials", "2"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--as-job needs a batch scheduler's backend") != std::string::npos);
  CHECK(r.err.find("nothing was changed") != std::string::npos);
  // Not grown, not moved, no event: the refusal came first.
  CHECK(run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events", "--format", "csv"}, dir).out == events_before);
  CHECK(run_dlsweep(db, {"query", "SELECT spec_json FROM studies", "--format", "csv"}, dir).out == spec_before);
}

TEST_CASE("failed trials are retried up to max_retries and end FAILED with the reason") {
  auto dir = fresh_dir("failing");
  write(dir / "fail.yaml", R"(
name: e2e-fail
backend: {kind: local, max_concurrent: 2}
trial:
  command: [/bin/sh, -c, "echo 'boom at attempt' $DLSWEEP_ATTEMPT >&2; exit 7"]
  max_retries: 2
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1, 2]}
)");
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "fail.yaml"}, dir);
  CHECK(r.exit_code == 3);  // no trial completed
  auto res = run_dlsweep(db, {"results", "e2e-fail", "--format", "json"}, dir);
  REQUIRE(res.exit_code == 0);
  auto j = json::parse(res.out);
  REQUIRE(j.size() == 2);
  for (const auto& t : j) {
    CHECK(t["state"] == "FAILED");
    CHECK(t["attempt"] == 2);
    auto msg = t["message"].get<std::string>();
    CHECK(msg.find("exit code 7") != std::string::npos);
    CHECK(msg.find("boom at attempt 2") != std::string::npos);
  }
  auto retries = run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events WHERE to_state='WAITING' AND kind='transition'",
                              "--format", "csv"}, dir);
  CHECK(retries.out == "COUNT(*)\n4\n");
}

TEST_CASE("Ctrl-C cancels live trials, records CANCELLED and exits 130") {
  auto dir = fresh_dir("interrupt");
  write(dir / "slow.yaml", R"(
name: e2e-interrupt
backend: {kind: local, max_concurrent: 2}
trial:
  command: [/bin/sh, -c, "echo $$ > pid; exec sleep 60"]
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1, 2, 3]}
)");
  auto db = dir / "sweep.db";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    ::setenv("DLSWEEP_TRAIN", DLSWEEP_TRAIN_BIN, 1);
    std::freopen("/dev/null", "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "slow.yaml", (char*)nullptr);
    ::_exit(127);
  }
  // Wait until both trials run (their pid files exist), then interrupt.
  auto runs = dir / "dlsweep-runs" / "e2e-interrupt";
  REQUIRE(test_support::wait_until(
      [&] { return fs::exists(runs / "trial-0000" / "pid") && fs::exists(runs / "trial-0001" / "pid"); }));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);

  for (const char* t : {"trial-0000", "trial-0001"}) {
    int child = 0;
    std::ifstream(runs / t / "pid") >> child;
    REQUIRE(child > 0);
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string s;
    std::getline(stat, s);
    CHECK((s.empty() || s.find(") Z") != std::string::npos));  // gone (or a zombie of init)
  }
  auto res = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(res.out == "state,COUNT(*)\nCANCELLED,2\n");
  auto st = run_dlsweep(db, {"query", "SELECT state FROM studies", "--format", "csv"}, dir);
  CHECK(st.out == "state\nSTOPPED\n");
}

TEST_CASE("resume after the orchestrator was killed: orphans stopped, live trials requeued, sweep completes") {
  auto dir = fresh_dir("resume");
  // Each trial appends one record per second for 3 s, continuing seq after what the file
  // already holds (the protocol's rule for a relaunch of the same attempt).
  write(dir / "slow.yaml", R"(
name: e2e-resume
backend: {kind: local, max_concurrent: 2}
trial:
  command:
    - /bin/sh
    - -c
    - |
      echo $$ > pid
      n=$(cat metrics.jsonl 2>/dev/null | wc -l)
      for i in 1 2 3; do
        sleep 1
        echo "{\"seq\":$n,\"kind\":\"eval\",\"step\":$i,\"metrics\":{\"loss\":$i}}" >> metrics.jsonl
        n=$((n+1))
      done
objective: {metric: loss, mode: min}
search: {algorithm: grid}
space: {x: [1, 2, 3, 4]}
)");
  auto db = dir / "sweep.db";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen("/dev/null", "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "slow.yaml", (char*)nullptr);
    ::_exit(127);
  }
  auto runs = dir / "dlsweep-runs" / "e2e-resume";
  REQUIRE(test_support::wait_for_file(runs / "trial-0001" / "pid"));
  ::kill(pid, SIGKILL);  // the orchestrator dies; its two trials run on as orphans
  ::waitpid(pid, nullptr, 0);
  int orphan = 0;
  std::ifstream(runs / "trial-0000" / "pid") >> orphan;

  auto r = run_dlsweep(db, {"resume", "e2e-resume"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("orphaned process") != std::string::npos);
  {
    std::ifstream stat("/proc/" + std::to_string(orphan) + "/stat");
    std::string s;
    std::getline(stat, s);
    CHECK((s.empty() || s.find(") Z") != std::string::npos));
  }
  auto q = run_dlsweep(db, {"query", "SELECT number, state, attempt FROM trials ORDER BY number", "--format", "csv"}, dir);
  CHECK(q.out == "number,state,attempt\n0,COMPLETE,0\n1,COMPLETE,0\n2,COMPLETE,0\n3,COMPLETE,0\n");
  // The two interrupted trials were requeued (same attempt), and each grid point ran once.
  auto rq = run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events WHERE reason LIKE 'requeued%'", "--format", "csv"}, dir);
  CHECK(rq.out == "COUNT(*)\n2\n");
  // Every trial's three (or more, for the requeued ones) records are in, none duplicated.
  auto recs = run_dlsweep(db, {"query", "SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM records GROUP BY trial_id)",
                               "--format", "csv"}, dir);
  CHECK(recs.out == "MIN(n)\n3\n");
  auto st = run_dlsweep(db, {"query", "SELECT state FROM studies", "--format", "csv"}, dir);
  CHECK(st.out == "state\nFINISHED\n");
}
