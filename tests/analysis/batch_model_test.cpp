// The batch-size model: exact recovery of S_min and B_crit, E = B S, the regimes' bands,
// the refusal below 3 batch sizes, and a reproducible bootstrap interval around the estimate.
#include <catch2/catch.hpp>

#include <cmath>

#include "analysis/batch_model.hpp"

using namespace dlsweep::analysis;

namespace {
// S(B) = 100 (1 + 1000/B): B = 100 -> 1100, 1000 -> 200, 10000 -> 110 (by hand).
std::vector<BatchPoint> exact() { return {{100, 1100}, {1000, 200}, {10000, 110}}; }
}  // namespace

TEST_CASE("batch model: noise-free points give back S_min = 100 and B_crit = 1000") {
  auto f = fit_batch_model(exact());
  REQUIRE(f);
  CHECK(f->s_min == Approx(100).epsilon(1e-6));
  CHECK(f->b_crit == Approx(1000).epsilon(1e-6));
  CHECK(f->e_min == Approx(100000).epsilon(1e-6));  // E_min = S_min B_crit
  CHECK(f->rmse_log == Approx(0).margin(1e-6));
  CHECK_FALSE(f->at_edge);
  CHECK(f->points == 3);
  CHECK(f->batch_lo == 100);
  CHECK(f->batch_hi == 10000);
  // E(B) = E_min (1 + B/B_crit) is B S(B): at B = 1000, 2 x E_min and 2 x S_min (McCandlish).
  CHECK(samples_at(*f, 1000) == Approx(200000).epsilon(1e-6));
  CHECK(steps_at(*f, 1000) == Approx(200).epsilon(1e-6));
  CHECK(samples_at(*f, 100) == Approx(100 * 1100).epsilon(1e-6));
  // Exact data: every bootstrap resample (>= 2 distinct batches) fits the same curve.
  CHECK(f->b_crit_lo == Approx(1000).epsilon(1e-4));
  CHECK(f->b_crit_hi == Approx(1000).epsilon(1e-4));
}

TEST_CASE("batch model: scaling every S by c scales S_min by c and leaves B_crit") {
  std::vector<BatchPoint> p = {{32, 900}, {128, 300}, {512, 140}, {2048, 95}, {8192, 90}};
  auto a = fit_batch_model(p, {.bootstrap = 0});
  for (auto& x : p) x.steps *= 3;
  auto b = fit_batch_model(p, {.bootstrap = 0});
  REQUIRE(a);
  REQUIRE(b);
  CHECK(b->s_min == Approx(3 * a->s_min).epsilon(1e-6));
  CHECK(b->b_crit == Approx(a->b_crit).epsilon(1e-6));
}

TEST_CASE("batch model: a noisy sweep gets a reproducible interval that holds the estimate") {
  // 100 (1 + 500/B) times multiplicative noise of a few percent.
  std::vector<BatchPoint> p;
  const double noise[] = {1.05, 0.96, 1.02, 0.97, 1.04, 0.98, 1.01};
  int i = 0;
  for (double b : {32., 64., 128., 256., 512., 1024., 4096.}) p.push_back({b, 100 * (1 + 500 / b) * noise[i++]});
  auto f = fit_batch_model(p, {.bootstrap = 500, .level = 0.9, .seed = 7});
  auto g = fit_batch_model(p, {.bootstrap = 500, .level = 0.9, .seed = 7});
  REQUIRE(f);
  REQUIRE(g);
  CHECK(f->b_crit == Approx(500).epsilon(0.25));
  CHECK(f->b_crit_lo <= f->b_crit);
  CHECK(f->b_crit_hi >= f->b_crit);
  CHECK(f->b_crit_lo < f->b_crit_hi);
  CHECK(f->resamples > 400);
  CHECK(f->b_crit_lo == g->b_crit_lo);  // fixed seed: the same interval every time
  CHECK(f->b_crit_hi == g->b_crit_hi);
}

TEST_CASE("batch model: refuses with fewer than 3 batch sizes, and says so") {
  auto f = fit_batch_model({{100, 1100}, {1000, 200}});
  REQUIRE_FALSE(f);
  CHECK(f.error().what.find("2 batch sizes reached the target, at least 3 are needed") != std::string::npos);
  // Two points at the same batch are one batch size.
  auto g = fit_batch_model({{100, 1100}, {100, 1000}, {1000, 200}});
  REQUIRE_FALSE(g);
  CHECK(g.error().what.find("2 batch sizes") != std::string::npos);
  auto h = fit_batch_model({{100, 0}, {200, 1}, {300, 1}});
  REQUIRE_FALSE(h);
  CHECK(h.error().what.find("must be positive") != std::string::npos);
}

TEST_CASE("batch model: data with no bend is flagged as a bound, not a measurement") {
  // Perfect scaling everywhere: S = 1e6 / B. B_crit runs to the edge of the search.
  auto f = fit_batch_model({{10, 1e5}, {100, 1e4}, {1000, 1e3}}, {.bootstrap = 0});
  REQUIRE(f);
  CHECK(f->at_edge);
  CHECK(f->b_crit > 1000);
}

TEST_CASE("regimes: B <= B_crit/4 perfect scaling, B >= 4 B_crit maximal data parallelism") {
  CHECK(classify(250, 1000) == Regime::perfect_scaling);
  CHECK(classify(251, 1000) == Regime::diminishing_returns);
  CHECK(classify(1000, 1000) == Regime::diminishing_returns);
  CHECK(classify(3999, 1000) == Regime::diminishing_returns);
  CHECK(classify(4000, 1000) == Regime::maximal_parallelism);
  CHECK(regime_name(Regime::maximal_parallelism) == "maximal data parallelism");
  CHECK(regime_id(Regime::perfect_scaling) == "perfect_scaling");
}

TEST_CASE("batch model: the README's real sweeps count as determined") {
  // examples/critical-batch.yaml at 88% (README, "The critical batch size, measured"):
  // B_crit 1066, interval 796 .. 2555.
  auto f = fit_batch_model({{32, 14070}, {64, 6786}, {128, 3276}, {256, 1829}, {512, 812}, {1024, 615}, {2048, 539},
                            {4096, 540}});
  REQUIRE(f);
  CHECK(f->b_crit == Approx(1066).epsilon(0.01));
  CHECK(f->b_crit_lo == Approx(796).epsilon(0.01));
  CHECK(f->b_crit_hi == Approx(2555).epsilon(0.01));
  CHECK(f->determined);
  CHECK(f->undetermined_reason.empty());
  CHECK(f->to_determine.empty());
  // bench/plan_validation.sh's 1-rank sweep at 85% (README, "dlsweep best --explain"): 187 .. 762.
  auto g = fit_batch_model({{64, 936}, {128, 468}, {256, 413}, {512, 203}, {1024, 180}});
  REQUIRE(g);
  CHECK(g->b_crit_lo == Approx(187).epsilon(0.01));
  CHECK(g->b_crit_hi == Approx(762.2).epsilon(0.01));
  CHECK(g->determined);
}

TEST_CASE("batch model: a wide interval leaves B_crit undetermined, with what to run") {
  // Steps still halve with the batch at 256: the interval runs from 235 to 1.28e5 (545x).
  auto f = fit_batch_model({{32, 1000}, {64, 560}, {128, 250}, {256, 160}});
  REQUIRE(f);
  INFO(f->undetermined_reason << " / " << f->to_determine);
  CHECK_FALSE(f->at_edge);
  CHECK(f->b_crit_hi / f->b_crit_lo > kDeterminedSpan);
  CHECK_FALSE(f->determined);
  CHECK_THAT(f->undetermined_reason, Catch::Contains("90% bootstrap interval") && Catch::Contains("more than 10"));
  CHECK_THAT(f->to_determine, Catch::Contains("run batch sizes above 256 (e.g. 512, 1024)"));
  CHECK_THAT(f->to_determine, Catch::Contains("seed: [1, 2, 3]"));  // only 4 batch sizes
  // Flat steps from 256 on: the bend, if any, lies below the batch sizes run.
  auto g = fit_batch_model({{256, 130}, {512, 100}, {1024, 98}, {2048, 101}});
  REQUIRE(g);
  CHECK_FALSE(g->determined);
  CHECK_THAT(g->to_determine, Catch::Contains("run batch sizes below 256 (e.g. 128, 64)"));
  CHECK_THAT(g->to_determine, !Catch::Contains("above"));
}

TEST_CASE("batch model: a study that already runs several seeds is not told to run 2-3 seeds") {
  // Each point the mean of 3 seeds (`seed: [1, 2, 3]` in the study): the advice to add
  // `seed: [1, 2, 3]` was given all the same.
  auto f = fit_batch_model({{32, 1000, 3}, {64, 560, 3}, {128, 250, 3}, {256, 160, 3}});
  REQUIRE(f);
  INFO(f->to_determine);
  CHECK_FALSE(f->determined);
  CHECK_THAT(f->to_determine, !Catch::Contains("seed: [1, 2, 3]"));
  CHECK_THAT(f->to_determine, Catch::Contains("more batch sizes within 32 .. 256 (4 so far, each a mean of 3 or more seeds)"));
  // One point of a single seed: the advice stands.
  auto g = fit_batch_model({{32, 1000, 3}, {64, 560, 1}, {128, 250, 3}, {256, 160, 3}});
  REQUIRE(g);
  CHECK_THAT(g->to_determine, Catch::Contains("seed: [1, 2, 3]"));
}

TEST_CASE("batch model: B_crit far outside the batch sizes, at the edge, or without an interval is not determined") {
  // Perfect scaling over 32 .. 512: B_crit ~2e4, more than 4x beyond the largest batch.
  auto f = fit_batch_model({{32, 1000}, {64, 500}, {128, 250}, {256, 125}, {512, 64}});
  REQUIRE(f);
  CHECK_FALSE(f->determined);
  CHECK_THAT(f->undetermined_reason, Catch::Contains("more than 4x outside the batch sizes fitted (32 .. 512)"));
  CHECK_THAT(f->to_determine, Catch::Contains("above 512"));
  auto g = fit_batch_model({{10, 1e5}, {100, 1e4}, {1000, 1e3}}, {.bootstrap = 0});
  REQUIRE(g);
  CHECK_FALSE(g->determined);
  CHECK_THAT(g->undetermined_reason, Catch::Contains("edge of its search") && Catch::Contains("no bootstrap interval"));
  // Noise-free data and an interval of zero width: determined.
  auto h = fit_batch_model(exact());
  REQUIRE(h);
  CHECK(h->determined);
}
