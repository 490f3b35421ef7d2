// The step-time model (compute linear in per-rank batch + exposed allreduce), its rules for
// unmeasured rank counts, a prediction computed by hand, and the plan's optimum.
#include <catch2/catch.hpp>

#include <cmath>

#include "analysis/goodput.hpp"
#include "analysis/to_json.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using dlsweep::analysis::testing::study_of;
using dlsweep::analysis::testing::trial;

namespace {

// A trial whose step takes 0.01 + 0.001 b seconds at per-rank batch b (plus `ar` of exposed
// allreduce), evaluated every 12800 samples (0.5 s at 1 rank, 0.25 s at 2), 1 s of startup.
TrialData timed(std::int64_t number, std::int64_t batch, int ranks, double ar) {
  TrialData t = trial(number, batch, 0.1, 1, std::nullopt);
  t.ranks = ranks;
  const double b = static_cast<double>(batch) / ranks;
  const double step_s = 0.01 + 0.001 * b + ar;
  const std::int64_t every = 12800 / batch;
  const double eval_s = 0.5 / ranks;
  for (int k = 1; k <= 4; ++k) {
    EvalPoint p;
    p.step = every * k;
    p.samples = p.step * batch;
    p.wall_s = 1.0 + static_cast<double>(p.step) * step_s + k * eval_s;
    p.t_compute_s = static_cast<double>(every) * (step_s - ar);
    p.t_data_s = 0;
    p.t_allreduce_s = static_cast<double>(every) * ar;
    p.t_eval_s = eval_s;
    t.curve.push_back(p);
  }
  EvalPoint fin = t.curve.back();  // the final record repeats the last eval's metrics
  fin.final = true;
  fin.wall_s += 0.1;
  t.curve.push_back(fin);
  return t;
}

StudyData timed_study() {
  return study_of({timed(0, 32, 1, 0), timed(1, 64, 1, 0), timed(2, 128, 1, 0), timed(3, 256, 2, 0.01)});
}

BatchFit fit_100_1000() {
  BatchFit f;
  f.s_min = 100;
  f.b_crit = 1000;
  f.e_min = 100000;
  f.batch_lo = 100;
  f.batch_hi = 10000;
  f.b_crit_lo = 800;
  f.b_crit_hi = 1250;
  f.determined = true;
  return f;
}

}  // namespace

TEST_CASE("step samples: per-step time from wall time between evals, less evaluations") {
  auto s = step_samples(timed_study());
  REQUIRE(s.size() == 4);
  CHECK(s[0].per_rank_batch == 32);
  CHECK(s[0].compute_s == Approx(0.042));
  CHECK(s[0].allreduce_s == Approx(0));
  CHECK(s[0].start_s == Approx(1.0));
  CHECK(s[0].eval_s == Approx(0.5));
  CHECK(s[0].eval_interval_samples == 12800);
  CHECK(s[3].ranks == 2);
  CHECK(s[3].per_rank_batch == 128);
  CHECK(s[3].compute_s == Approx(0.138));
  CHECK(s[3].allreduce_s == Approx(0.01));
  CHECK(s[3].eval_s == Approx(0.25));
}

TEST_CASE("step-time model: compute = 0.01 + 0.001 b recovered; allreduce and eval per rank count") {
  auto m = fit_step_time(step_samples(timed_study()));
  REQUIRE(m);
  CHECK(m->a_c == Approx(0.01));
  CHECK(m->b_c == Approx(0.001));
  CHECK(m->compute_rms_rel == Approx(0).margin(1e-9));
  CHECK(allreduce_time(*m, 1) == 0);
  CHECK(allreduce_time(*m, 2) == Approx(0.01));
  // One measured rank count: the ring factor 2(N-1)/N relative to N = 2 (which is 1).
  CHECK(allreduce_time(*m, 4) == Approx(0.015));
  CHECK(allreduce_time(*m, 8) == Approx(0.0175));
  CHECK(eval_time(*m, 2) == Approx(0.25));
  CHECK(eval_time(*m, 4) == Approx(0.125));  // the 1-rank time split over 4 ranks
  CHECK(m->start_s == Approx(1.0));
}

TEST_CASE("step-time model: Pollux's a + b max(N-2, 0) with two measured rank counts") {
  std::vector<StepSample> s(4);
  s[0] = {.ranks = 2, .per_rank_batch = 64, .compute_s = 0.1, .allreduce_s = 0.01};
  s[1] = {.ranks = 4, .per_rank_batch = 64, .compute_s = 0.1, .allreduce_s = 0.02};
  s[2] = {.ranks = 1, .per_rank_batch = 32, .compute_s = 0.05};
  s[3] = {.ranks = 1, .per_rank_batch = 128, .compute_s = 0.2};
  auto m = fit_step_time(s);
  REQUIRE(m);
  CHECK(m->net_a == Approx(0.01));
  CHECK(m->net_b == Approx(0.005));
  CHECK(allreduce_time(*m, 8) == Approx(0.04));
  CHECK(allreduce_time(*m, 4) == Approx(0.02));  // measured: used as measured
}

TEST_CASE("step-time model: refuses one per-rank batch size") {
  std::vector<StepSample> s = {{.per_rank_batch = 64, .compute_s = 0.1}, {.per_rank_batch = 64, .compute_s = 0.11}};
  auto m = fit_step_time(s);
  REQUIRE_FALSE(m);
  CHECK(m.error().what.find("1 per-rank batch size") != std::string::npos);
}

TEST_CASE("prediction by hand: B = 1000 on 2 ranks") {
  auto m = fit_step_time(step_samples(timed_study()));
  REQUIRE(m);
  auto p = predict(fit_100_1000(), *m, 1000, 2);
  // S = 200; step = 0.01 + 0.001 x 500 + 0.01 = 0.52 s; E = 200000 samples -> ceil(15.625) = 16
  // evaluations of 0.25 s; 1 s startup: 1 + 104 + 4 = 109 s.
  CHECK(p.steps == Approx(200));
  CHECK(p.step_s == Approx(0.52));
  CHECK(p.evals == 16);
  CHECK(p.time_s == Approx(109));
  CHECK(p.regime == Regime::diminishing_returns);
  auto q = predict_with_steps(250, *m, 1000, 2, 1000);
  CHECK(q.time_s == Approx(1 + 250 * 0.52 + 20 * 0.25));
}

TEST_CASE("plan: the predicted best batch is where d/dB of S(B) T_step(B) vanishes") {
  StepTimeModel m;
  m.a_c = 0.1;
  m.b_c = 0.0001;
  m.allreduce_measured[2] = 0.05;
  m.net_rule = "test";
  // T(B, 1) = 100 (1 + 1000/B)(0.1 + 1e-4 B): minimum at B = sqrt(0.1 x 1000 / 1e-4) = 1000, 40 s.
  // T(B, 4) adds 0.075 s/step of allreduce: minimum at sqrt(0.175 x 1000 / 2.5e-5) = 2646.
  auto plan = make_plan(fit_100_1000(), m, {1, 4}, {.candidates = 51});
  REQUIRE(plan);
  REQUIRE(plan->rows.size() == 2);
  CHECK(plan->rows[0].best.batch == 1000);
  CHECK(plan->rows[0].best.time_s == Approx(40));
  CHECK(plan->rows[1].best.batch == Approx(2646).epsilon(0.1));
  CHECK(static_cast<long>(plan->rows[1].best.batch) % 4 == 0);
  for (const auto& c : plan->rows[1].candidates) CHECK(c.time_s >= plan->rows[1].best.time_s);
  CHECK(plan->rows[1].best.batch > plan->rows[0].best.batch);  // communication pushes the batch up
  CHECK_FALSE(plan->inputs.empty());
  CHECK_FALSE(plan->assumptions.empty());
  auto bad = make_plan(fit_100_1000(), m, {0});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "--ranks");
}

TEST_CASE("step-time model: a negative fitted intercept becomes a per-sample cost through 0") {
  // Times growing faster than linearly: the straight line through them crosses 0 at b > 0.
  std::vector<StepSample> s = {{.per_rank_batch = 32, .compute_s = 0.01},
                               {.per_rank_batch = 64, .compute_s = 0.03},
                               {.per_rank_batch = 128, .compute_s = 0.07}};
  auto m = fit_step_time(s);
  REQUIRE(m);
  CHECK(m->a_c == 0);
  // y = b x with weights 1/y^2: b = sum(x/y) / sum(x^2/y^2).
  const double num = 32 / 0.01 + 64 / 0.03 + 128 / 0.07;
  const double den = 32 * 32 / 1e-4 + 64 * 64 / 9e-4 + 128 * 128 / 49e-4;
  CHECK(m->b_c == Approx(num / den));
  CHECK(compute_time(*m, 1) > 0);
}

TEST_CASE("plan: an undetermined B_crit names no regime, and the inputs say so") {
  StepTimeModel m;
  m.a_c = 0.1;
  m.b_c = 0.0001;
  m.net_rule = "test";
  BatchFit f = fit_100_1000();
  f.determined = false;
  f.undetermined_reason = "its 90% bootstrap interval 0.064 .. 2.56e+05 spans a factor 4e+06, more than 10";
  f.to_determine = "run batch sizes above 10000";
  auto plan = make_plan(f, m, {1, 2});
  REQUIRE(plan);
  for (const auto& row : plan->rows) {
    CHECK_FALSE(row.best.regime);
    for (const auto& c : row.candidates) CHECK_FALSE(c.regime);
    CHECK(to_json(row.best)["regime"].is_null());
  }
  std::string inputs;
  for (const auto& s : plan->inputs) inputs += s + "\n";
  CHECK_THAT(inputs, Catch::Contains("B_crit is not determined (its 90% bootstrap interval 0.064 .. 2.56e+05") &&
                         Catch::Contains("no regime is named") && Catch::Contains("run batch sizes above 10000"));
  // The determined fit names one.
  auto named = make_plan(fit_100_1000(), m, {1});
  REQUIRE(named);
  CHECK(named->rows[0].best.regime);
}

TEST_CASE("step-time model of a study: the refusal names the metric the trials did not report") {
  // Four batch sizes ran to the end, but the program reported no time_compute_s.
  std::vector<TrialData> ts;
  for (std::int64_t b : {32, 64, 128, 256}) {
    TrialData t = timed(static_cast<std::int64_t>(ts.size()), b, 1, 0);
    for (auto& p : t.curve) p.t_compute_s.reset();
    ts.push_back(t);
  }
  auto m = fit_step_time(study_of(ts));
  REQUIRE_FALSE(m);
  INFO(m.error().message());
  CHECK_THAT(m.error().what, Catch::Contains("none of the 4 COMPLETE trials with one batch size reported time_compute_s"));
  CHECK_THAT(m.error().fix, Catch::Contains("report time_compute_s") && Catch::Contains("time_eval_s") &&
                                Catch::Contains("time_allreduce_exposed_s"));
  // Timings at one batch size only: the fix says to run more batch sizes, each with the metric.
  for (auto& p : ts[0].curve) p.t_compute_s = 0.1;
  auto one = fit_step_time(study_of(ts));
  REQUIRE_FALSE(one);
  CHECK_THAT(one.error().what, Catch::Contains("1 per-rank batch size") && Catch::Contains("(1 of the 4 COMPLETE"));
  CHECK_THAT(one.error().fix, Catch::Contains("two or more batch sizes, each reporting time_compute_s"));
  // With the metric at every batch size the model fits; the plan says what the missing
  // time_eval_s means, and does not call 0 s a measured evaluation time.
  for (auto& t : ts)
    for (auto& p : t.curve) p.t_compute_s = 0.1, p.t_eval_s.reset();
  auto fitted = fit_step_time(study_of(ts));
  REQUIRE(fitted);
  CHECK(fitted->eval_untimed == 4);
  auto plan = make_plan(fit_100_1000(), *fitted, {1});
  REQUIRE(plan);
  std::string inputs;
  for (const auto& s : plan->inputs) inputs += s + "\n";
  CHECK_THAT(inputs, Catch::Contains("4 of the 4 trials reported no time_eval_s: their evaluations count as step time"));
  CHECK_THAT(inputs, !Catch::Contains("one evaluation measured"));
}
