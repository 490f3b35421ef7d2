// Pooled time to target: speed groups ignore schedule-only parameters, the wall time at a
// step interpolates a curve, and the pooled time is the group's median at the trial's step.
#include <catch2/catch.hpp>

#include <cmath>

#include "analysis/explain.hpp"
#include "analysis/pooled_time.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using namespace dlsweep::analysis::testing;

namespace {

// A curve with an eval every `every` steps, `per_step` seconds per step plus `start` s.
std::vector<EvalPoint> curve(std::int64_t every, int evals, double per_step, double start = 0) {
  std::vector<EvalPoint> c;
  for (int k = 1; k <= evals; ++k) {
    EvalPoint p;
    p.step = every * k;
    p.wall_s = start + per_step * double(p.step);
    c.push_back(p);
  }
  return c;
}

// A trial of `batch` with `rule` reaching the target at `steps` after `time` s, with a
// curve of 10 evals every 100 steps at `per_step`.
TrialData timed(std::int64_t number, std::int64_t batch, const char* rule, std::optional<std::int64_t> steps,
                std::optional<double> time, double per_step, const char* state = "COMPLETE") {
  TrialData t = trial(number, batch, 0.1, 0, steps, time, 0.9, state);
  t.params["lr_rule"] = rule;
  t.params["warmup_epochs"] = number % 3;
  t.curve = curve(100, 10, per_step);
  return t;
}

}  // namespace

TEST_CASE("pooled time: the speed key drops schedule-only parameters", "[analysis][pooled]") {
  const nlohmann::json a = {{"batch_size", 512}, {"base_lr", 0.1}, {"lr_rule", "sqrt"}, {"warmup_epochs", 2},
                            {"seed", 3},         {"momentum", 0.9}, {"threads", 2}, {"model", "mlp"}};
  const nlohmann::json b = {{"batch_size", 512}, {"base_lr", 0.4}, {"lr_rule", "linear"}, {"warmup_epochs", 0},
                            {"seed", 1},         {"momentum", 0.0}, {"threads", 2}, {"model", "mlp"}};
  CHECK(speed_key(a) == speed_key(b));
  CHECK(speed_key(a) == nlohmann::json{{"batch_size", 512}, {"threads", 2}, {"model", "mlp"}});
  nlohmann::json c = a;
  c["threads"] = 1;  // resources change the speed
  CHECK(speed_key(a) != speed_key(c));
  c = a;
  c["optimizer"] = "lars";  // so does the optimizer (LARS computes norms per layer)
  CHECK(speed_key(a) != speed_key(c));
  // The schedule's timeline costs nothing by itself...
  c = a;
  c["epochs"] = 20;
  c["decay_milestones"] = {10, 15};
  CHECK(speed_key(a) == speed_key(c));
  // ...but with a batch ramp it places the batch increases (smith: at the decay milestones).
  nlohmann::json r = a;
  r["batch_ramp"] = "smith";
  r["decay_milestones"] = {5, 8};
  nlohmann::json r2 = r;
  r2["decay_milestones"] = {3, 8};
  CHECK(speed_key(r) != speed_key(r2));
  r2 = r;
  r2["base_lr"] = 0.8;  // the LR itself still costs nothing
  CHECK(speed_key(r) == speed_key(r2));
}

TEST_CASE("pooled time: wall time at a step", "[analysis][pooled]") {
  const auto c = curve(100, 3, 0.5, 2.0);  // (100, 52) (200, 102) (300, 152)
  CHECK(*wall_at_step(c, 200) == Approx(102));
  CHECK(*wall_at_step(c, 250) == Approx(127));
  CHECK(*wall_at_step(c, 50) == Approx(26));  // before the first record: wall ∝ step from it
  CHECK_FALSE(wall_at_step(c, 301));
  CHECK_FALSE(wall_at_step({}, 10));
}

TEST_CASE("pooled time: the median of the group at the trial's step", "[analysis][pooled]") {
  // Batch 128: three schedules at 0.01 s/step on average; trial 1 was lucky (its own clock
  // read 8.5 s at step 1000), trial 2 unlucky. A diverged batch-128 trial (FAILED) ran at
  // that speed too and counts. Batch 512 is its own group.
  StudyData s = study_of({timed(0, 128, "linear", 1000, 10.0, 0.0100), timed(1, 128, "sqrt", 1000, 8.5, 0.0085),
                          timed(2, 128, "none", 1000, 11.0, 0.0110), timed(3, 128, "linear", {}, {}, 0.0102, "FAILED"),
                          timed(4, 512, "linear", 300, 9.0, 0.0300)});
  s.trainer = true;
  const auto p = pooled_times_to_target(s);
  REQUIRE(p.size() == 5);
  for (int i : {0, 1, 2}) {
    REQUIRE(p[i]);
    CHECK(p[i]->trials == 4);
    CHECK(p[i]->seconds == Approx(10.1));  // median of 10.0, 8.5, 11.0, 10.2
  }
  CHECK_FALSE(p[3]);  // never reached the target
  REQUIRE(p[4]);
  CHECK(p[4]->trials == 1);
  CHECK(p[4]->seconds == Approx(9.0));
  // A user program: parameter names mean nothing to us, every trial stands alone.
  s.trainer = false;
  const auto alone = pooled_times_to_target(s);
  CHECK(alone[1]->trials == 1);
  CHECK(alone[1]->seconds == Approx(8.5));
}

TEST_CASE("pooled time: explain ranks by it, so a lucky clock reading does not win", "[analysis][pooled]") {
  // Batch 512 reaches the target at step 300 at 0.031 s/step (9.3 s) in all three of its
  // schedules; batch 128 needs 1000 steps at 0.01 s/step (10 s), but one batch-128 trial's
  // clock read 9.0 s. By its own readings the lucky trial wins; pooled, batch 512 does.
  std::vector<TrialData> ts;
  for (int i = 0; i < 3; ++i) ts.push_back(timed(i, 128, "linear", 1000, i == 1 ? 9.0 : 10.0, 0.01));
  for (int i = 3; i < 6; ++i) ts.push_back(timed(i, 512, "linear", 300, 9.3, 0.031));
  for (auto& t : ts) t.params["warmup_epochs"] = t.number;  // six schedules, two speed groups
  StudyData s = study_of(ts);
  CHECK(explain_best(s, RankBy::time).winner->trials == std::vector<std::int64_t>{1});
  s.trainer = true;
  const auto e = explain_best(s, RankBy::time);
  REQUIRE(e.winner);
  CHECK(e.winner->batch == 512);
  CHECK(e.pooled_over_several == 6);
}

TEST_CASE("pooled time: seed noise and the std stay on the own readings; ties go to them", "[analysis][pooled]") {
  // Two seeds of each of two schedules of one speed group, all at step 1000: every pooled
  // time is the same (the group's median), the own readings differ.
  std::vector<TrialData> ts;
  const double own[] = {10.0, 11.0, 9.6, 10.2};
  for (int i = 0; i < 4; ++i) {
    TrialData t = trial(i, 128, i < 2 ? 0.1 : 0.2, i % 2, 1000, own[i]);
    t.curve = curve(100, 10, own[i] / 1000);
    ts.push_back(std::move(t));
  }
  StudyData s = study_of(ts);
  s.trainer = true;
  const auto e = explain_best(s, RankBy::time);
  REQUIRE(e.winner);
  CHECK(e.winner->trials == std::vector<std::int64_t>{2, 3});  // tie on pooled time: own mean 9.9 < 10.5
  CHECK(e.winner->std == Approx(std::sqrt(0.18)));               // std of 9.6 and 10.2, not 0
  REQUIRE(e.seed_log_sd);
  CHECK(*e.seed_log_sd > 0.03);
}
