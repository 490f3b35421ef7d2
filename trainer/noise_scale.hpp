// noise_scale.hpp — the gradient noise scale B_simple = tr(Σ)/|G|² (McCandlish et al. 2018,
// Appendix A; docs/math.md#gradient-noise-scale), estimated from squared gradient norms
// measured at two batch sizes. A pure estimator: the trainer feeds it measurements; it keeps
// no clock and does no I/O.
//
// One measurement (b_small < b_big; |G_small|² is the mean over the small batches):
//     |G|²   ≈ (b_big·|G_big|² − b_small·|G_small|²) / (b_big − b_small)
//     tr(Σ)  ≈ (|G_small|² − |G_big|²) / (1/b_small − 1/b_big)
// Each estimate is unbiased but noisy (|G|²'s can be negative), so an exponential moving
// average of EACH is kept (decay `ema`, bias-corrected like Adam's moments so early values are
// not pulled toward 0), and B_simple is the ratio of the averages — the paper's procedure;
// the ratio of single noisy estimates would be biased.
// Where the small batches differ in size (an odd batch split in halves), b_small is their
// harmonic mean: E|G_b|² = |G|² + tr(Σ)/b, averaged over the small batches, is then exact.
#pragma once

#include <cstdint>
#include <optional>

namespace dlsweep::trainer {

class NoiseScaleEstimator {
 public:
  /// `ema` in [0, 1): weight of the past in each moving average (params.json noise_scale_ema).
  explicit NoiseScaleEstimator(double ema = 0.95) : ema_(ema) {}

  /// Adds one measurement. Ignored unless 0 < b_small < b_big and both norms are finite.
  void add(double g_small_sq, double b_small, double g_big_sq, double b_big);

  std::int64_t count() const { return count_; }
  /// Moving averages of the two estimates (nullopt before the first measurement).
  std::optional<double> grad_norm_sq() const;
  std::optional<double> trace_sigma() const;
  /// B_simple = tr(Σ)/|G|² of the averages; nullopt while |G|² is not positive.
  std::optional<double> noise_scale() const;

  /// State for checkpoints: {avg |G|², avg tr(Σ), count}.
  struct State {
    double g2 = 0, trace = 0;
    std::int64_t count = 0;
  };
  State state() const { return {g2_, trace_, count_}; }
  void restore(const State& s) {
    g2_ = s.g2;
    trace_ = s.trace;
    count_ = s.count;
  }

 private:
  double correction() const;  ///< 1 − ema^count
  double ema_;
  double g2_ = 0, trace_ = 0;  ///< un-corrected EMAs
  std::int64_t count_ = 0;
};

}  // namespace dlsweep::trainer
