// End-to-end, several objectives and constraints: the real dlsweep on a small grid of a
// protocol-speaking Python trial whose accuracy and time to target trade against each
// other, with a time budget (rank_seconds) that makes the most accurate trials infeasible.
// `best` names the feasible Pareto front (text and json), `results` marks it; NSGA-II runs
// a study; a pruner with several objectives is refused before anything runs.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "multi_objective_fixture.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace mo_fixture;

TEST_CASE("e2e multi-objective: best names the feasible Pareto front; results marks it") {
  const auto dir = setup("mo_front", study("mo", "search: {algorithm: grid}\nspace: {x: [0.1, 0.3, 0.5, 0.7, 0.9]}",
                                           "constraints: [{metric: rank_seconds, max: 80}, {reached_target: true}]\n"));
  const auto db = dir / "dlsweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // The progress line's best is the best feasible trial, not the most accurate one over
  // the budget (trial 4, 0.905).
  CHECK(r.err.find("best val_acc 0.725 (trial 2)") != std::string::npos);
  CHECK(r.err.find("(trial 4) |") == std::string::npos);

  // x = 0.7 and 0.9 are the most accurate but over the budget (81, 101 rank-seconds); x = 0.1
  // never reaches the target. The front: x = 0.5 (trial 2) and x = 0.3 (trial 1).
  auto b = run_dlsweep(db, {"best", "mo", "--format", "json"}, dir);
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  const auto j = json::parse(b.out);
  REQUIRE(j["front"].size() == 2);
  CHECK(j["front"][0]["trial"] == 2);
  CHECK(j["front"][1]["trial"] == 1);
  CHECK(j["front"][0]["values"][0].get<double>() == Approx(0.725));
  CHECK(j["front"][0]["values"][1].get<double>() == Approx(60));
  CHECK(j["feasible"] == 2);
  CHECK(j["objectives"][1]["metric"] == "time_to_target_s");

  auto text = run_dlsweep(db, {"best", "mo"}, dir);
  INFO(text.out << text.err);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("Pareto front of mo (val_acc (max), time_to_target_s (min)): 2 points") != std::string::npos);
  CHECK(text.out.find("3 COMPLETE trials break a constraint") != std::string::npos);

  auto e = run_dlsweep(db, {"best", "mo", "--explain"}, dir);
  INFO(e.out << e.err);
  REQUIRE(e.exit_code == 0);
  CHECK(e.out.find("against trial 1: better val_acc") != std::string::npos);

  // --write-schedule is for a pbt study: refused, not silently ignored (plain and --explain).
  for (const std::vector<std::string>& args : {std::vector<std::string>{"best", "mo", "--write-schedule", "r.yaml"},
                                               {"best", "mo", "--explain", "--write-schedule", "r.yaml"}}) {
    auto w = run_dlsweep(db, args, dir);
    INFO(w.out << w.err);
    CHECK(w.exit_code == 2);
    CHECK(w.err.find("--write-schedule: only a pbt study has a schedule to write") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "r.yaml"));
  }

  auto res = run_dlsweep(db, {"results", "mo", "--format", "json"}, dir);
  REQUIRE(res.exit_code == 0);
  const auto rows = json::parse(res.out);
  REQUIRE(rows.size() == 5);
  for (const auto& row : rows) {
    const auto n = row["trial"].get<int>();
    INFO("trial " << n);
    CHECK(row["pareto_front"] == (n == 1 || n == 2));
    CHECK(row["feasible"] == (n == 1 || n == 2));
    // Each objective's own value: trial 0 never reached the target (no time_to_target_s),
    // and still shows the val_acc it reached.
    REQUIRE(row["objective_val_acc"].is_number());
    CHECK(row["objective_val_acc"].get<double>() == Approx(0.5 + 0.45 * (0.1 + 0.2 * n)));
    CHECK(row["objective_time_to_target_s"].is_null() == (n == 0));
  }
  auto table = run_dlsweep(db, {"results", "mo"}, dir);
  CHECK(table.out.find("front") != std::string::npos);

  // The report's model carries the front and the hypervolume over trials.
  auto page = run_dlsweep(db, {"report", "mo", "-o", "-"}, dir);
  REQUIRE(page.exit_code == 0);
  CHECK(page.out.find(R"("multi_objective":{"front":[{"trial":2,"values":[0.725,60.0]},{"trial":1,)") != std::string::npos);
}

TEST_CASE("e2e multi-objective: nsga2 runs a study; a pruner is refused with several objectives") {
  const auto dir = setup("mo_nsga2", study("mo2", "search: {algorithm: nsga2, trials: 8, population_size: 4, seed: 3}\n"
                                                  "space: {x: {uniform: [0.2, 1.0]}}",
                                           "constraints: [{metric: rank_seconds, max: 80}]\n"));
  const auto db = dir / "dlsweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto b = run_dlsweep(db, {"best", "mo2", "--format", "json"}, dir);
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(json::parse(b.out)["eligible"] == 8);

  const auto bad = setup("mo_pruner", study("mo3", "search: {algorithm: random, trials: 4}\nspace: {x: [0.5]}",
                                            "pruner: {kind: median}\n"));
  auto p = run_dlsweep(bad / "dlsweep.db", {"submit", "study.yaml"}, bad);
  CHECK(p.exit_code == 2);
  CHECK(p.err.find("pruner.kind") != std::string::npos);
  CHECK_FALSE(fs::exists(bad / "dlsweep-runs"));
}

namespace {

// Two objectives (a reported loss and the derived rank_seconds) and a constraint on a reported
// metric, one trial at a time: every value a function of the params.
std::string replay_study(const std::string& algorithm, int trials) {
  return R"(
name: mo-replay
backend: {kind: local, max_concurrent: 1}
trial:
  command:
    - /usr/bin/python3
    - -c
    - |
      import json, math
      p = json.load(open("params.json"))
      loss = (p["x"] - 0.3) ** 2 + (math.log10(p["lr"]) + 2) ** 2
      rec = {"seq": 0, "kind": "final", "wall_s": 10 + 50 * p["x"], "metrics": {"loss": loss, "cost": 1 - p["x"]}}
      open("metrics.jsonl", "a").write(json.dumps(rec) + "\n")
objective:
  - {metric: loss, mode: min}
  - {metric: rank_seconds, mode: min}
constraints: [{metric: cost, max: 0.8}]
search: {algorithm: )" + algorithm + ", trials: " + std::to_string(trials) + R"(, seed: 5}
space:
  x: {uniform: [0.0, 1.0]}
  lr: {log_uniform: [1.0e-4, 1.0]}
)";
}

json all_params(const fs::path& db, const fs::path& dir) {
  auto r = run_dlsweep(db, {"results", "mo-replay", "--format", "json"}, dir);
  REQUIRE(r.exit_code == 0);
  json out = json::array();
  for (const auto& row : json::parse(r.out)) out.push_back(row["params"]);
  return out;
}

}  // namespace

TEST_CASE("e2e multi-objective: a study grown after it finished draws what one run draws (resume rebuilds the values)") {
  const std::string algorithm = GENERATE(as<std::string>{}, "nsga2, population_size: 4", "tpe, startup_trials: 4");
  INFO(algorithm);
  const std::string tag = algorithm.substr(0, 4);
  auto straight = fresh_dir("mo-replay-straight-" + tag), grown = fresh_dir("mo-replay-grown-" + tag);
  std::ofstream(straight / "study.yaml") << replay_study(algorithm, 14);
  std::ofstream(grown / "study.yaml") << replay_study(algorithm, 7);
  auto a = run_dlsweep(straight / "d.db", {"submit", "study.yaml"}, straight);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto b = run_dlsweep(grown / "d.db", {"submit", "study.yaml"}, grown);
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  auto c = run_dlsweep(grown / "d.db", {"resume", "mo-replay", "--add-trials", "7"}, grown);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const auto want = all_params(straight / "d.db", straight), got = all_params(grown / "d.db", grown);
  REQUIRE(want.size() == 14);
  CHECK(got == want);
}
