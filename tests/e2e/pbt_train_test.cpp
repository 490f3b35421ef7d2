// Population-based training with dlsweep-train on Fashion-MNIST (a subset): each member's next
// interval resumes from its parent's copied checkpoint with the batch_ramp/lr_schedule/stop_epoch
// dlsweep derives from the lineage; `best --write-schedule` writes a study that replays the
// winner's schedule as one fixed trial and reaches exactly the winner's value.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

TEST_CASE("pbt with dlsweep-train: intervals resume from copied checkpoints; the replay reaches the winner's value") {
  auto dir = fresh_dir("pbt-train");
  std::ofstream(dir / "study.yaml") << R"(name: pbt-train
backend: {kind: local, max_concurrent: 2}
trial:
  trainer: {model: mlp, hidden: [32], epochs: 3, eval_every: 1, train_subset: 2000, test_subset: 500, threads: 1}
objective: {metric: val_acc, mode: max}
search:
  algorithm: pbt
  seed: 1
  population: 2
  interval: {by: epoch, every: 1}
  perturb: {base_lr: [0.5, 2], batch_size: [0.5, 2]}
space:
  base_lr: {log_uniform: [0.01, 0.3]}
  batch_size: [32, 64, 128]
fixed: {momentum: 0.9}
runs_dir: runs
)";
  const auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto states = run_dlsweep(db, {"query", "SELECT number, state FROM trials ORDER BY number", "--format", "csv"}, dir);
  CHECK(states.out == "number,state\n0,COMPLETE\n1,COMPLETE\n2,COMPLETE\n3,COMPLETE\n4,COMPLETE\n5,COMPLETE\n");
  // `results` carries each trial's link: member, generation, parent (and the donor of an exploit).
  auto res = run_dlsweep(db, {"results", "pbt-train", "--format", "json"}, dir);
  REQUIRE(res.exit_code == 0);
  for (const auto& t : json::parse(res.out)) {
    const int n = t.at("trial").get<int>();
    CHECK(t.at("pbt_member") == n % 2);
    CHECK(t.at("pbt_generation") == n / 2);
    if (n < 2) CHECK(t.at("pbt_parent").is_null());
    else CHECK(t.at("pbt_parent").get<int>() / 2 == n / 2 - 1);
    if (!t.at("pbt_exploit_from").is_null()) CHECK(t.at("pbt_exploit_from") == t.at("pbt_parent"));
  }
  auto table = run_dlsweep(db, {"results", "pbt-train"}, dir);
  CHECK(table.out.find("m1 g2") != std::string::npos);
  // Generation 1 started from generation 0's checkpoints: it holds its parent's and its own.
  for (int n : {2, 3}) {
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir / "runs" / "pbt-train" / ("trial-000" + std::to_string(n)) / "checkpoints"))
      files += e.is_regular_file();
    CHECK(files >= 2);
  }
  std::ifstream p2(dir / "runs" / "pbt-train" / "trial-0002" / "params.json");
  const json params2 = json::parse(p2);
  CHECK(params2.at("stop_epoch") == 2.0);
  CHECK(params2.at("lr_schedule").get<std::string>().starts_with("0:"));

  auto best = run_dlsweep(db, {"best", "pbt-train", "--format", "json", "--write-schedule", "replay.yaml"}, dir);
  INFO(best.err);
  REQUIRE(best.exit_code == 0);
  const json b = json::parse(best.out);
  CHECK(b.at("trial").get<int>() >= 4);
  REQUIRE(b.at("schedule").size() == 3);
  // --explain: the evidence of each interval of the winner's lineage (its value, its rank among
  // the interval's trials, and for an exploit whose weights it took).
  auto explain = run_dlsweep(db, {"best", "pbt-train", "--explain", "--format", "json"}, dir);
  REQUIRE(explain.exit_code == 0);
  const json ev = json::parse(explain.out).at("evidence");
  REQUIRE(ev.size() == 3);
  for (std::size_t i = 0; i < ev.size(); ++i) {
    CHECK(ev[i].at("trial") == b.at("schedule")[i].at("trial"));
    CHECK(ev[i].at("ranked") == 2);
    CHECK(ev[i].at("rank").get<int>() >= 1);
    CHECK(ev[i].at("rank").get<int>() <= 2);
    CHECK(ev[i].at("exploit_from") == b.at("schedule")[i].at("exploit_from"));
  }
  auto text = run_dlsweep(db, {"best", "pbt-train", "--explain"}, dir);
  CHECK(text.out.find("evidence, interval by interval") != std::string::npos);
  CHECK(run_dlsweep(db, {"best", "pbt-train", "--group-by", "base_lr"}, dir).exit_code == 2);
  auto replay = run_dlsweep(db, {"submit", "replay.yaml"}, dir);
  INFO(replay.err);
  REQUIRE(replay.exit_code == 0);
  auto values = run_dlsweep(db, {"query",
                                 "SELECT s.name, o.best_value FROM trial_objective o JOIN trials t ON t.id = o.trial_id "
                                 "JOIN studies s ON s.id = t.study_id WHERE s.name = 'pbt-train-replay' OR "
                                 "(s.name = 'pbt-train' AND t.number = " + std::to_string(b.at("trial").get<int>()) + ") "
                                 "ORDER BY s.name",
                                 "--format", "json"},
                            dir);
  INFO(values.out);
  const json v = json::parse(values.out);
  REQUIRE(v.size() == 2);
  CHECK(v[0].at("best_value") == v[1].at("best_value"));  // the same schedule, the same run
}
