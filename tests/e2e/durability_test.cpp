// kill -9 at any moment loses nothing (the write batches of the engine, engine.hpp): the
// orchestrator is killed several times mid-sweep and resumed. After each kill, every trial
// whose program ran has its row and params in the database (write-ahead: committed before
// the job existed); in the end every trial is COMPLETE with each of its reports recorded
// exactly once.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "db/storage.hpp"
#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kTrials = 60, kReports = 10;

// Trial dirs whose program has written at least one record.
int started_trials(const fs::path& runs) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(runs, ec), end; !ec && it != end; it.increment(ec))
    if (fs::exists(it->path() / "metrics.jsonl")) ++n;
  return n;
}

// Starts `dlsweep --db DB args` in `dir`, waits until `threshold` trials have started (or
// it exits), then kills it with SIGKILL. Returns false when it had already finished.
bool kill_midway(const fs::path& dir, const fs::path& db, const std::vector<std::string>& args, int threshold,
                 const std::string& study = "e2e-durable") {
  pid_t pid = spawn_dlsweep(dir, db, args);
  REQUIRE(pid >= 0);
  const fs::path runs = dir / "dlsweep-runs" / study;
  // The bound stops a hang only: a loaded machine may take long, a healthy run never needs it.
  bool exited = false;
  test_support::wait_until(
      [&] {
        if (started_trials(runs) >= threshold) return true;
        exited = ::waitpid(pid, nullptr, WNOHANG) == pid;
        return exited;
      },
      std::chrono::minutes(5), std::chrono::milliseconds(2));
  if (exited) return false;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return true;
}

// Every trial dir whose program wrote a record has a database row whose params are the
// params.json the program read.
void check_write_ahead(const fs::path& dir, const fs::path& db) {
  auto storage = dlsweep::db::Storage::open_readonly(db);
  REQUIRE(storage.has_value());
  auto study = (*storage)->find_study("e2e-durable");
  REQUIRE(study.has_value());
  REQUIRE(study->has_value());
  auto trials = (*storage)->list_trials((*study)->id);
  REQUIRE(trials.has_value());
  std::map<std::string, nlohmann::json> params_by_dir;
  for (const auto& t : *trials) params_by_dir[fs::path(t.trial_dir).filename().string()] = t.params;
  const fs::path runs = dir / "dlsweep-runs" / "e2e-durable";
  for (const auto& e : fs::directory_iterator(runs)) {
    if (!fs::exists(e.path() / "metrics.jsonl")) continue;
    INFO(e.path().string());
    auto row = params_by_dir.find(e.path().filename().string());
    REQUIRE(row != params_by_dir.end());
    std::ifstream in(e.path() / "params.json");
    CHECK(nlohmann::json::parse(in, nullptr, false) == row->second);
  }
}

}  // namespace

TEST_CASE("kill -9 mid-sweep, again and again: params were durable before launch, resume loses no report") {
  auto dir = fresh_dir("durable");
  std::ofstream(dir / "study.yaml") << R"(
name: e2e-durable
backend: {kind: local, max_concurrent: 4}
trial:
  command:
    - /bin/sh
    - -c
    - |
      n=$(cat metrics.jsonl 2>/dev/null | wc -l)
      while [ "$n" -lt )" << kReports << R"( ]; do
        echo "{\"seq\":$n,\"kind\":\"eval\",\"step\":$((n+1)),\"metrics\":{\"loss\":$n}}" >> metrics.jsonl
        n=$((n+1))
      done
objective: {metric: loss, mode: min}
search: {algorithm: random, trials: )" << kTrials << R"(, seed: 3}
space:
  x: {uniform: [0.0, 1.0]}
  lr: {log_uniform: [1.0e-4, 1.0]}
)";
  const fs::path db = dir / "sweep.db";
  int kills = 0;
  if (kill_midway(dir, db, {"submit", "study.yaml"}, 6)) ++kills;
  check_write_ahead(dir, db);
  for (int threshold : {20, 35}) {
    if (kill_midway(dir, db, {"resume", "e2e-durable"}, threshold)) ++kills;
    check_write_ahead(dir, db);
  }
  CHECK(kills >= 1);
  auto r = run_dlsweep(db, {"resume", "e2e-durable"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_write_ahead(dir, db);
  auto q = run_dlsweep(db,
                       {"query",
                        "SELECT COUNT(*), SUM(state = 'COMPLETE') FROM trials", "--format", "csv"},
                       dir);
  CHECK(q.out == "COUNT(*),SUM(state = 'COMPLETE')\n" + std::to_string(kTrials) + "," + std::to_string(kTrials) + "\n");
  // Each trial's reports, each exactly once (records are keyed by trial, attempt, seq).
  auto recs = run_dlsweep(db,
                          {"query",
                           "SELECT MIN(n), MAX(n), COUNT(*) FROM (SELECT COUNT(*) AS n FROM records GROUP BY trial_id)",
                           "--format", "csv"},
                          dir);
  CHECK(recs.out == "MIN(n),MAX(n),COUNT(*)\n" + std::to_string(kReports) + "," + std::to_string(kReports) + "," +
                        std::to_string(kTrials) + "\n");
  auto st = run_dlsweep(db, {"query", "SELECT state FROM studies", "--format", "csv"}, dir);
  CHECK(st.out == "state\nFINISHED\n");
}

namespace {

// A study whose value is a function of its params (so a replay sees the same history), one
// trial at a time (so each suggestion sees every earlier trial finished).
std::string replay_study(const std::string& algorithm) {
  return R"(
name: e2e-replay
backend: {kind: local, max_concurrent: 1}
trial:
  command:
    - /usr/bin/python3
    - -c
    - |
      import json, math
      p = json.load(open("params.json"))
      loss = (p["x"] - 0.3) ** 2 + (math.log10(p["lr"]) + 2) ** 2 + (0.1 if p["opt"] == "adam" else 0.0)
      open("metrics.jsonl", "a").write(json.dumps({"seq": 0, "kind": "final", "metrics": {"loss": loss}}) + "\n")
objective: {metric: loss, mode: min}
search: {algorithm: )" + algorithm + R"(, trials: 14, seed: 11}
space:
  x: {uniform: [0.0, 1.0]}
  lr: {log_uniform: [1.0e-4, 1.0]}
  opt: [sgd, adam]
)";
}

std::vector<nlohmann::json> params_in_order(const fs::path& db) {
  auto storage = dlsweep::db::Storage::open_readonly(db);
  REQUIRE(storage.has_value());
  auto study = (*storage)->find_study("e2e-replay");
  REQUIRE(study.has_value());
  REQUIRE(study->has_value());
  auto trials = (*storage)->list_trials((*study)->id);
  REQUIRE(trials.has_value());
  std::vector<nlohmann::json> out;
  for (const auto& t : *trials) out.push_back(t.params);
  return out;
}

}  // namespace

TEST_CASE("kill -9 and resume: tpe and qmc draw the params an uninterrupted run draws") {
  if (access("/usr/bin/python3", X_OK) != 0) {
    WARN("skipped: /usr/bin/python3 is not installed");
    return;
  }
  const std::string algorithm = GENERATE(as<std::string>{}, "tpe, startup_trials: 4", "qmc");
  INFO(algorithm);
  const std::string tag = algorithm.substr(0, 3);
  auto straight = fresh_dir("replay-straight-" + tag), killed = fresh_dir("replay-killed-" + tag);
  std::ofstream(straight / "study.yaml") << replay_study(algorithm);
  std::ofstream(killed / "study.yaml") << replay_study(algorithm);
  auto a = run_dlsweep(straight / "sweep.db", {"submit", "study.yaml"}, straight);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  int kills = 0;
  if (kill_midway(killed, killed / "sweep.db", {"submit", "study.yaml"}, 5, "e2e-replay")) ++kills;
  if (kill_midway(killed, killed / "sweep.db", {"resume", "e2e-replay"}, 9, "e2e-replay")) ++kills;
  CHECK(kills >= 1);
  auto b = run_dlsweep(killed / "sweep.db", {"resume", "e2e-replay"}, killed);
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  const auto want = params_in_order(straight / "sweep.db"), got = params_in_order(killed / "sweep.db");
  REQUIRE(want.size() == 14);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("trial " << i);
    CHECK(got[i] == want[i]);
  }
}
