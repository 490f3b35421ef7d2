// The noise-scale estimator on synthetic per-sample gradients g_i = G + ξ_i, ξ ~ N(0, Σ)
// with a known diagonal Σ: B_simple = tr(Σ)/|G|² must come out within tolerance, from
// equal small batches (ranks) and from unequal halves of an odd batch (1 rank).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "trainer/noise_scale.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;

namespace {

constexpr int kDim = 20;

struct Truth {
  std::vector<double> g, sigma;
  double g2 = 0, trace = 0;
  Truth() {
    for (int k = 0; k < kDim; ++k) {
      g.push_back(0.3 + 0.02 * k);
      sigma.push_back(0.5 + 0.1 * k);
      g2 += g.back() * g.back();
      trace += sigma.back() * sigma.back();
    }
  }
  double noise_scale() const { return trace / g2; }
};

double sq(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return s;
}

// The mean of `n` per-sample gradients.
std::vector<double> batch_mean(const Truth& t, SplitMix64& rng, int n) {
  std::vector<double> m(kDim, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < kDim; ++k) m[k] += (t.g[k] + t.sigma[k] * rng.normal()) / n;
  return m;
}

// One data-parallel measurement: sizes[r] samples on rank r.
void measure(NoiseScaleEstimator& est, const Truth& t, SplitMix64& rng, const std::vector<int>& sizes) {
  std::vector<double> big(kDim, 0.0);
  double small_sq = 0, inv_b = 0;
  int total = 0;
  for (int n : sizes) total += n;
  for (int n : sizes) {
    auto m = batch_mean(t, rng, n);
    small_sq += sq(m) / static_cast<double>(sizes.size());
    inv_b += 1.0 / n / static_cast<double>(sizes.size());
    for (int k = 0; k < kDim; ++k) big[k] += m[k] * n / total;
  }
  est.add(small_sq, 1.0 / inv_b, sq(big), total);
}

}  // namespace

TEST_CASE("noise scale from equal small batches (ranks) matches tr(Sigma)/|G|^2", "[noise]") {
  const Truth t;
  REQUIRE(t.noise_scale() == Approx(t.trace / t.g2));
  for (int ranks : {2, 4}) {
    INFO(ranks << " ranks");
    NoiseScaleEstimator est(0.999);
    SplitMix64 rng(42 + ranks);
    for (int i = 0; i < 8000; ++i) measure(est, t, rng, std::vector<int>(ranks, 16));
    REQUIRE(est.count() == 8000);
    CHECK(*est.grad_norm_sq() == Approx(t.g2).epsilon(0.08));
    CHECK(*est.trace_sigma() == Approx(t.trace).epsilon(0.08));
    CHECK(*est.noise_scale() == Approx(t.noise_scale()).epsilon(0.12));
  }
}

TEST_CASE("noise scale from the unequal halves of an odd batch (one rank)", "[noise]") {
  const Truth t;
  NoiseScaleEstimator est(0.999);
  SplitMix64 rng(7);
  for (int i = 0; i < 8000; ++i) measure(est, t, rng, {15, 16});
  CHECK(*est.noise_scale() == Approx(t.noise_scale()).epsilon(0.12));
}

TEST_CASE("noise scale estimator: empty, degenerate input, state round trip", "[noise]") {
  NoiseScaleEstimator est(0.95);
  CHECK_FALSE(est.noise_scale());
  CHECK_FALSE(est.grad_norm_sq());
  est.add(1.0, 8, 0.5, 8);   // b_small == b_big: ignored
  est.add(NAN, 8, 0.5, 16);  // non-finite: ignored
  CHECK(est.count() == 0);
  // Exact arithmetic on one measurement: |G|² = (16·0.5 − 8·1)/8 = 0 → no ratio yet;
  // tr(Σ) = 0.5/(1/8 − 1/16) = 8.
  est.add(1.0, 8, 0.5, 16);
  CHECK(*est.grad_norm_sq() == Approx(0.0).margin(1e-12));
  CHECK(*est.trace_sigma() == Approx(8.0));
  CHECK_FALSE(est.noise_scale());
  // Second: |G|² = (16·0.75 − 8·1)/8 = 0.5, tr = 0.25/(1/16) = 4. Averages bias-corrected.
  est.add(1.0, 8, 0.75, 16);
  const double c = 1 - 0.95 * 0.95;
  CHECK(*est.grad_norm_sq() == Approx((0.95 * 0.05 * 0.0 + 0.05 * 0.5) / c));
  CHECK(*est.trace_sigma() == Approx((0.95 * 0.05 * 8 + 0.05 * 4) / c));
  CHECK(*est.noise_scale() == Approx((0.95 * 0.05 * 8 + 0.05 * 4) / (0.05 * 0.5)));
  NoiseScaleEstimator copy(0.95);
  copy.restore(est.state());
  CHECK(*copy.noise_scale() == *est.noise_scale());
}
