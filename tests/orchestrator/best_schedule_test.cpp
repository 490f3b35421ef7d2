// choose_best: only COMPLETE trials can win, the rest are counted, explanations tell the truth.
#include <catch2/catch.hpp>

#include "orchestrator/best_schedule.hpp"

using dlsweep::db::TrialSummary;
using dlsweep::orch::BestBy;
using dlsweep::orch::choose_best;

static TrialSummary trial(std::int64_t n, const char* state, std::optional<double> best, std::optional<double> ttt = {},
                          std::optional<std::int64_t> steps = {}) {
  TrialSummary t;
  t.trial_id = n + 1;
  t.number = n;
  t.state = state;
  t.params = {{"batch_size", 64 << n}};
  t.best_value = best;
  t.value = best;
  t.time_to_target_s = ttt;
  t.steps_to_target = steps;
  return t;
}

TEST_CASE("best: a trial that reached the target and then diverged cannot win") {
  std::vector<TrialSummary> ts = {trial(0, "FAILED", 0.95, 1.0, 10), trial(1, "COMPLETE", 0.90, 5.0, 50),
                                  trial(2, "COMPLETE", 0.89, 7.0, 70), trial(3, "PRUNED", 0.5)};
  for (BestBy by : {BestBy::automatic, BestBy::time, BestBy::steps, BestBy::value}) {
    auto out = choose_best(ts, "val_acc", "max", 0.88, by);
    REQUIRE(out.choice);
    CHECK(ts[out.choice->index].number == 1);
    CHECK(out.eligible == 2);
    CHECK(out.left_out_text() == "left out: 1 FAILED, 1 PRUNED (only COMPLETE trials can win)");
  }
}

TEST_CASE("best: with every trial crashed there is nothing to recommend") {
  std::vector<TrialSummary> ts = {trial(0, "FAILED", 0.95, 1.0, 10), trial(1, "FAILED", 0.7)};
  auto out = choose_best(ts, "val_acc", "max", 0.88, BestBy::automatic);
  CHECK_FALSE(out.choice);
  CHECK(out.eligible == 0);
  CHECK(out.left_out_text().find("2 FAILED") != std::string::npos);
}

TEST_CASE("best --by value says how many trials reached the target, not that none did") {
  std::vector<TrialSummary> ts = {trial(0, "COMPLETE", 0.95, 9.0, 90), trial(1, "COMPLETE", 0.90, 5.0, 50),
                                  trial(2, "COMPLETE", 0.80)};
  auto out = choose_best(ts, "val_acc", "max", 0.88, BestBy::value);
  REQUIRE(out.choice);
  CHECK(ts[out.choice->index].number == 0);
  std::string all;
  for (const auto& l : out.choice->explanation) all += l + "\n";
  CHECK(all.find("no complete trial reached") == std::string::npos);
  CHECK(all.find("2 of 3 complete trials reached the target 0.88") != std::string::npos);

  std::vector<TrialSummary> none = {trial(0, "COMPLETE", 0.8), trial(1, "COMPLETE", 0.7)};
  auto n = choose_best(none, "val_acc", "max", 0.88, BestBy::value);
  REQUIRE(n.choice);
  CHECK(n.choice->explanation.at(1) == "no complete trial reached the target 0.88");
}

TEST_CASE("best: a lucky seed does not win over a configuration with a better mean") {
  // base_lr 0.2: seeds at 15 s and 30 s (mean 22.5); base_lr 0.1: 20 s and 22 s (mean 21).
  auto seeded = [](std::int64_t n, double lr, int seed, double ttt) {
    TrialSummary t = trial(n, "COMPLETE", 0.9, ttt, 100);
    t.params = {{"batch_size", 256}, {"base_lr", lr}, {"seed", seed}};
    return t;
  };
  std::vector<TrialSummary> ts = {seeded(0, 0.2, 1, 15.0), seeded(1, 0.2, 2, 30.0), seeded(2, 0.1, 1, 22.0),
                                  seeded(3, 0.1, 2, 20.0)};
  auto out = choose_best(ts, "val_acc", "max", 0.88, BestBy::time);
  REQUIRE(out.choice);
  CHECK(ts[out.choice->index].number == 3);  // the better seed of the better configuration
  std::string all;
  for (const auto& l : out.choice->explanation) all += l + "\n";
  CHECK(all.find("mean 21 s over 2 seeds") != std::string::npos);
  CHECK(all.find("runner-up: trial 0") != std::string::npos);
  // A configuration that missed the target on one of its seeds cannot win by time.
  ts[3].time_to_target_s.reset();
  ts[3].steps_to_target.reset();
  auto out2 = choose_best(ts, "val_acc", "max", 0.88, BestBy::time);
  REQUIRE(out2.choice);
  CHECK(ts[out2.choice->index].number == 0);
}

TEST_CASE("best: by time, pooled times rank the trials; ties go to the own time") {
  // Trial 1's own clock read 9.0 s, but the trials that train at its speed passed its step
  // at 10.1 s (median); trial 2 (another speed group) at 9.5 s: pooled, trial 2 wins.
  std::vector<TrialSummary> ts = {trial(0, "COMPLETE", 0.90, 10.0, 1000), trial(1, "COMPLETE", 0.90, 9.0, 1000),
                                  trial(2, "COMPLETE", 0.90, 9.5, 300)};
  auto own = choose_best(ts, "val_acc", "max", 0.88, BestBy::time);
  REQUIRE(own.choice);
  CHECK(ts[own.choice->index].number == 1);
  const std::map<std::int64_t, dlsweep::orch::PooledSeconds> pooled = {{0, {10.1, 3}}, {1, {10.1, 3}}, {2, {9.5, 1}}};
  auto out = choose_best(ts, "val_acc", "max", 0.88, BestBy::time, pooled);
  REQUIRE(out.choice);
  CHECK(ts[out.choice->index].number == 2);
  CHECK(out.choice->explanation.front().find("pooled") == std::string::npos);  // a group of one says nothing
  CHECK(out.choice->explanation.back().find("(pooled over the 3 trials that train at its speed: 10.1 s)") !=
        std::string::npos);
  // Steps rank by steps (ties by the own time); equal pooled times fall back to the own time.
  CHECK(ts[choose_best(ts, "val_acc", "max", 0.88, BestBy::steps, pooled).choice->index].number == 2);
  ts.pop_back();
  CHECK(ts[choose_best(ts, "val_acc", "max", 0.88, BestBy::time, pooled).choice->index].number == 1);
}

TEST_CASE("best: params in the explanation have 4 significant digits; one complete trial is 'trial'") {
  using dlsweep::orch::params_brief;
  std::vector<TrialSummary> ts = {trial(0, "COMPLETE", 0.95, 9.0, 90), trial(1, "FAILED", 0.90)};
  ts[0].params = {{"base_lr", 0.021039895028383833}, {"batch_size", 64}, {"opt", "sgd"}};
  ts[1].params = {{"base_lr", 0.3}, {"batch_size", 128}, {"opt", "sgd"}};
  auto out = choose_best(ts, "val_acc", "max", 0.88, BestBy::automatic);
  REQUIRE(out.choice);
  CHECK(out.choice->explanation.at(0).find("(base_lr=0.02104, batch_size=64)") != std::string::npos);
  CHECK(out.choice->explanation.at(1) == "1 of 1 complete trial reached the target");
  auto by_value = choose_best(ts, "val_acc", "max", 0.88, BestBy::value);
  REQUIRE(by_value.choice);
  CHECK(by_value.choice->explanation.at(1).rfind("1 of 1 complete trial reached the target 0.88", 0) == 0);

  CHECK(params_brief(ts[0].params) == "base_lr=0.02104, batch_size=64, opt=sgd");
  CHECK(params_brief({{"wd", 1.0e-5}, {"warmup", true}, {"lr", 0.1}}) == "lr=0.1, warmup=true, wd=1e-05");
  nlohmann::json only = {{"opt", true}};
  CHECK(params_brief(ts[0].params, &only) == "opt=sgd");
}
