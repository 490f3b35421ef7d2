// Steps to target per batch size: best over the other params by seed-group mean (a lucky
// seed does not win), batch sizes that never reached it kept as such, exclusions with reasons;
// and the noise scale at the record where the target was reached.
#include <catch2/catch.hpp>

#include "analysis/noise.hpp"
#include "analysis/seed_groups.hpp"
#include "analysis/target_table.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using dlsweep::analysis::testing::study_of;
using dlsweep::analysis::testing::trial;

TEST_CASE("seed groups: trials that differ only in seed are one configuration") {
  auto s = study_of({trial(0, 64, 0.1, 1, 100), trial(1, 64, 0.1, 2, 300), trial(2, 64, 0.05, 1, 180),
                     trial(3, 64, 0.05, 2, std::nullopt)});
  auto g = group_by_seed(s.trials, {0, 1, 2, 3});
  REQUIRE(g.size() == 2);
  CHECK(g[0].members == std::vector<std::size_t>{0, 1});
  CHECK(g[0].steps.mean == 200);
  CHECK(g[0].steps.std == Approx(std::sqrt(2.0) * 100));
  CHECK(g[0].all_reached);
  CHECK(g[1].reached == 1);
  CHECK_FALSE(g[1].all_reached);
  CHECK(g[0].config == nlohmann::json{{"base_lr", 0.1}, {"batch_size", 64}});
}

TEST_CASE("steps to target per batch: the better mean wins over a lucky seed") {
  // batch 64: lr 0.1 has seeds at 100 and 300 steps (mean 200); lr 0.05 at 180 and 190 (185).
  auto s = study_of({trial(0, 64, 0.1, 1, 100), trial(1, 64, 0.1, 2, 300), trial(2, 64, 0.05, 1, 180),
                     trial(3, 64, 0.05, 2, 190)});
  auto t = target_table(s);
  REQUIRE(t.rows.size() == 1);
  const auto& r = t.rows[0];
  CHECK(r.batch == 64);
  CHECK(r.trials == 4);
  CHECK(r.reached == 4);
  REQUIRE(r.steps);
  CHECK(r.steps->mean == 185);
  CHECK(r.steps->n == 2);
  CHECK(r.best_trials == std::vector<std::int64_t>{2, 3});
  CHECK(r.best_config == "base_lr=0.05");
  REQUIRE(r.samples);
  CHECK(r.samples->mean == 185 * 64);
  REQUIRE(r.time);
  CHECK(r.time->mean == Approx(18.5));
}

TEST_CASE("steps to target per batch: non-reaching batches are rows, not dropped; others are excluded with why") {
  auto failed = trial(3, 256, 0.1, 1, 10, 1.0, 0.95, "FAILED");
  failed.message = "diverged at step 40";
  auto ramp = trial(4, 256, 0.1, 1, 20);
  ramp.batch_ramp = true;
  auto s = study_of({trial(0, 64, 0.1, 1, 500), trial(1, 128, 0.1, 1, 300), trial(2, 4096, 0.1, 1, std::nullopt, {}, 0.8),
                     failed, ramp, trial(5, 512, 0.1, 1, std::nullopt, {}, 0.5, "RUNNING")});
  auto t = target_table(s);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[2].batch == 4096);
  CHECK(t.rows[2].trials == 1);
  CHECK(t.rows[2].reached == 0);
  CHECK_FALSE(t.rows[2].best_group);
  CHECK_FALSE(t.rows[2].steps);
  CHECK(t.reaching_rows().size() == 2);
  REQUIRE(t.excluded.size() == 3);
  CHECK(t.excluded[0].trial == 3);
  CHECK(t.excluded[0].reason == "FAILED: failed (diverged at step 40)");
  CHECK(t.excluded[1].reason.find("batch_ramp") != std::string::npos);
  CHECK(t.excluded[2].reason == "RUNNING: not finished yet");
}

TEST_CASE("steps to target per batch: a configuration that missed the target on one seed cannot be the best") {
  auto s = study_of({trial(0, 64, 0.1, 1, 100), trial(1, 64, 0.1, 2, std::nullopt), trial(2, 64, 0.05, 1, 400)});
  auto t = target_table(s);
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].reached == 2);
  CHECK(t.rows[0].best_trials == std::vector<std::int64_t>{2});
}

TEST_CASE("seed noise: pooled std of log time, and the 2-standard-error rule") {
  auto s = study_of({trial(0, 64, 0.1, 1, 10, std::exp(1.0)), trial(1, 64, 0.1, 2, 10, std::exp(1.2)),
                     trial(2, 64, 0.05, 1, 10, std::exp(2.0)), trial(3, 64, 0.05, 2, 10, std::exp(2.2))});
  auto g = group_by_seed(s.trials, {0, 1, 2, 3});
  auto sd = pooled_log_time_sd(g, s.trials);
  REQUIRE(sd);
  // each group: deviations +-0.1, squares 0.02 per group, 0.04 over 2 degrees of freedom.
  CHECK(*sd == Approx(std::sqrt(0.02)));
  // Means e^1.1-ish vs e^2.1-ish: a log ratio ~1.0 against 2 x 0.1414 x 1 = 0.283: not within.
  CHECK_FALSE(within_noise(g[0], g[1], *sd));
  CHECK(within_noise(g[0], g[1], 1.0));
  CHECK_FALSE(pooled_log_time_sd(group_by_seed(s.trials, {0, 2}), s.trials));  // no replicates
}

TEST_CASE("noise scale: B_simple at the record that reached the target, and its ratio to B_crit") {
  auto t = trial(0, 256, 0.1, 1, 200);
  for (auto [step, bs] : {std::pair{100, 50.0}, {200, 80.0}, {300, 120.0}}) {
    EvalPoint p;
    p.step = step;
    p.samples = step * 256;
    p.noise_scale = bs;
    t.curve.push_back(p);
  }
  auto u = trial(1, 512, 0.1, 1, 250);  // reached at 250, between records with the metric
  for (auto [step, bs] : {std::pair{100, 60.0}, {200, 100.0}}) {
    EvalPoint p;
    p.step = step;
    p.noise_scale = bs;
    u.curve.push_back(p);
  }
  EvalPoint last;
  last.step = 250;  // the record that reached it carries no noise scale
  u.curve.push_back(last);
  auto s = study_of({t, u, trial(2, 64, 0.1, 1, std::nullopt)});
  auto n = noise_scales(s);
  REQUIRE(n.size() == 2);
  CHECK(n[0].series.size() == 3);
  CHECK(n[0].at_target == 80.0);
  CHECK(n[1].at_target == 100.0);
  auto sum = summarize_noise(s, n, 450.0);
  CHECK(sum.trials == 2);
  CHECK(*sum.median_at_target == 90);
  CHECK(*sum.lo == 80);
  CHECK(*sum.hi == 100);
  CHECK(*sum.ratio_to_b_crit == Approx(0.2));
}
