// A trial's objective values and constraint values: derived figures, best vs last (a stored
// spec's objectives and constraints are read in stored_study_test.cpp).
#include <catch2/catch.hpp>

#include <cmath>

#include "common/multi_objective.hpp"

using namespace dlsweep;

namespace {
TrialFigures sample_trial() {
  TrialFigures t;
  t.add_metric("val_acc", 0.5);
  t.add_metric("val_acc", 0.9);
  t.add_metric("val_acc", 0.8);
  t.add_metric("val_loss", std::nan(""));
  t.time_to_target_s = 120;
  t.steps_to_target = 400;
  t.samples_to_target = 51200;
  t.wall_s = 300;
  t.last_samples = 100000;
  t.last_eval_wall_s = 250;
  t.ranks = 4;
  return t;
}
}  // namespace

TEST_CASE("multi objective: derived figures and reported metrics", "[common][multi]") {
  const auto t = sample_trial();
  CHECK(*figure(t, "val_acc", true, true) == 0.9);
  CHECK(*figure(t, "val_acc", false, true) == 0.5);
  CHECK(*figure(t, "val_acc", true, false) == 0.8);
  CHECK_FALSE(figure(t, "val_loss", true, true));  // NaN is no value
  CHECK(*figure(t, "rank_seconds", false, true) == 1200);
  CHECK(*figure(t, "samples_per_s", true, true) == 400);  // not reported: samples / wall of the last eval
  CHECK(*figure(t, "time_to_target_s", false, true) == 120);
  auto reported = t;
  reported.add_metric("samples_per_s", 512);
  CHECK(*figure(reported, "samples_per_s", true, true) == 512);
  CHECK(is_derived_figure("rank_seconds"));
  CHECK_FALSE(is_derived_figure("val_acc"));
  CHECK(needs_target("steps_to_target"));
  CHECK_FALSE(needs_target("rank_seconds"));
}

TEST_CASE("multi objective: a vector needs every value", "[common][multi]") {
  const auto t = sample_trial();
  auto v = objective_values({{"val_acc", true}, {"time_to_target_s", false}}, t);
  REQUIRE(v);
  CHECK(*v == std::vector<double>{0.9, 120});
  TrialFigures missed = t;
  missed.time_to_target_s.reset();
  CHECK_FALSE(objective_values({{"val_acc", true}, {"time_to_target_s", false}}, missed));
}

TEST_CASE("multi objective: constraint values are Optuna's (<= 0 satisfied)", "[common][multi]") {
  auto t = sample_trial();
  ConstraintDef budget{"rank_seconds", std::nullopt, 3600, false};
  ConstraintDef tight{"rank_seconds", std::nullopt, 1000, false};
  ConstraintDef floor{"val_acc", 0.85, std::nullopt, false};  // reads the last value, 0.8
  ConstraintDef reach{"", std::nullopt, std::nullopt, true};
  const auto c = constraint_values({budget, tight, floor, reach}, t);
  REQUIRE(c.size() == 4);
  CHECK(c[0] == 1200 - 3600);
  CHECK(c[1] == 200);
  CHECK(c[2] == Approx(0.05));
  CHECK(c[3] == 0);
  t.steps_to_target.reset();
  CHECK(constraint_values({reach}, t)[0] == 1);
  CHECK(std::isinf(constraint_values({{"no_such", std::nullopt, 1, false}}, t)[0]));
  CHECK(describe(budget) == "rank_seconds <= 3600");
  CHECK(describe(reach) == "reached target");
}
