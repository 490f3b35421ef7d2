// batch_model.hpp — the batch-size model of McCandlish et al. 2018 / Shallue et al. 2018
// (docs/math.md#batch-size-model):
//     S(B) = S_min (1 + B_crit / B)      steps to target at batch B
//     E(B) = E_min (1 + B / B_crit)      samples to target, E = B S, B_crit = E_min / S_min
// fitted by least squares on log S (errors are multiplicative). E = B S makes the two fits
// the same: log E_i - log E(B_i) = log S_i - log S(B_i), so one fit gives both curves.
// For a fixed B_crit the best log S_min is closed-form (a mean); B_crit is found by a
// golden-section search on log B_crit after a coarse grid. Interval: bootstrap over the
// batch-size points (resampled with replacement, fixed seed, percentiles of B_crit).
// Regimes (rule documented in docs/math.md#regimes): B <= B_crit/4 perfect scaling,
// B >= 4 B_crit maximal data parallelism, in between diminishing returns.
// Whether the data determine B_crit at all (docs/math.md#when-b_crit-is-determined): not at
// the edge of the search, an interval spanning at most kDeterminedSpan, and B_crit within a
// factor kRegimeFactor of the measured batch sizes. An undetermined B_crit names no regime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::analysis {

inline constexpr double kRegimeFactor = 4;  ///< the regime bands are B_crit/4 and 4 B_crit

struct BatchPoint {
  double batch = 0;   ///< B > 0
  double steps = 0;   ///< steps to target, > 0
  std::size_t seeds = 1;  ///< seeds the steps are the mean of (what to run next says "more seeds" only below 2)
};

struct FitOptions {
  int bootstrap = 1000;          ///< resamples (0: no interval)
  double level = 0.90;           ///< central interval level
  std::uint64_t seed = 1;        ///< the bootstrap's generator seed (results are reproducible)
};

struct BatchFit {
  double s_min = 0;              ///< fewest steps (B -> infinity)
  double e_min = 0;              ///< fewest samples (B -> 0)
  double b_crit = 0;             ///< E_min / S_min
  double b_crit_lo = 0, b_crit_hi = 0;  ///< bootstrap interval (= b_crit when bootstrap = 0)
  double level = 0;              ///< interval level
  int resamples = 0;             ///< bootstrap resamples that could be fitted
  double rmse_log = 0;           ///< root-mean-square residual of log S
  std::size_t points = 0;        ///< batch sizes fitted
  double batch_lo = 0, batch_hi = 0;  ///< range of batch sizes fitted
  /// B_crit ended at the edge of the searched range (1e-3 x smallest .. 1e3 x largest batch):
  /// the data show no bend (all perfect scaling, or all flat); the value is a bound only.
  bool at_edge = false;
  /// The data pin B_crit down (see kDeterminedSpan): only then are regimes named. Set by
  /// fit_batch_model; false on a default-constructed fit.
  bool determined = false;
  std::string undetermined_reason;  ///< why not, in words (empty when determined)
  std::string to_determine;         ///< what to run so that it is (empty when determined)
};

/// B_crit counts as determined only when its bootstrap interval spans at most this factor
/// (hi/lo): within it B_crit is known to about sqrt(10) = 3.2x either way, less than the
/// factor kRegimeFactor between B_crit and either regime boundary.
inline constexpr double kDeterminedSpan = 10;

/// Fewer than 3 distinct batch sizes (or a non-positive value) is refused with an Error that
/// says how many there were and what to run.
Result<BatchFit> fit_batch_model(const std::vector<BatchPoint>& points, const FitOptions& opt = {});

/// S(B) and E(B) of a fit.
double steps_at(const BatchFit& f, double batch);
double samples_at(const BatchFit& f, double batch);

enum class Regime { perfect_scaling, diminishing_returns, maximal_parallelism };
Regime classify(double batch, double b_crit);
/// "perfect scaling", "diminishing returns", "maximal data parallelism".
std::string regime_name(Regime r);
/// "perfect_scaling", "diminishing_returns", "maximal_parallelism" (for JSON).
std::string regime_id(Regime r);

}  // namespace dlsweep::analysis
