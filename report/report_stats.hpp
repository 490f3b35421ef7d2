// report_stats.hpp — the small computations behind some report charts, on plain values:
// the Pareto front (time-to-target vs compute), parameter importance (correlation ratio),
// the best trial per batch size, and throughput scaling over ranks. No I/O.
//
// Invariants: inputs with non-finite numbers are skipped, never propagated; every output is
// in a deterministic order (ascending key, ties by trial number).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep::report {

struct ParetoPoint {
  std::int64_t number = 0;
  double time_s = 0;       ///< time to target
  double compute = 0;      ///< rank-seconds to target
};

/// Numbers of the points not dominated in (time_s, compute), both minimised; ordered by
/// compute ascending. A point equal to another on both is kept (neither dominates).
std::vector<std::int64_t> pareto_front(const std::vector<ParetoPoint>& points);

struct ImportanceInput {
  nlohmann::json value;  ///< the parameter's value in one trial (number, string, bool, ...)
  double objective = 0;
};

/// Correlation ratio eta^2 = (between-group sum of squares) / (total sum of squares) of the
/// objective grouped by the parameter's value. Numbers with more than `max_bins` distinct
/// values are grouped into `max_bins` bins of equal count (by rank). nullopt when fewer than
/// 3 finite objectives, one group only, or zero total variance.
std::optional<double> correlation_ratio(const std::vector<ImportanceInput>& rows, std::size_t max_bins = 8);

/// A parameter's importance is shown only with at least this many trials per group on
/// average (docs/math.md#parameter-importance): with one trial per group eta^2 is 1 whatever
/// the objective, and its expected value with no effect at all is (groups-1)/(trials-1).
inline constexpr std::size_t kMinTrialsPerGroup = 2;

struct ImportanceRating {
  std::optional<double> eta2;  ///< correlation_ratio; nullopt when not rated (why_not says why)
  std::size_t trials = 0;      ///< rows with a finite objective and a value
  std::size_t groups = 0;      ///< distinct values, or bins
  double chance = 0;           ///< (groups-1)/(trials-1): the expected eta^2 of a parameter with no effect
  std::string why_not;         ///< empty when rated
};

/// correlation_ratio, given only when trials >= kMinTrialsPerGroup x groups (and it exists).
ImportanceRating rate_importance(const std::vector<ImportanceInput>& rows, std::size_t max_bins = 8);

struct BatchTrial {
  std::int64_t number = 0;
  double batch = 0;
  std::optional<double> steps, samples, time_s;  ///< to target; empty = never reached
};

struct BatchBest {
  double batch = 0;
  std::size_t trials = 0, reached = 0;
  std::optional<double> steps, samples, time_s;  ///< min over the trials that reached it
  std::optional<std::int64_t> steps_trial, samples_trial, time_trial;
};

/// Per batch size (ascending), the best steps/samples/time to target over the other
/// parameters (Shallue et al.: metaparameters re-tuned per batch), and how many trials did
/// and did not reach the target.
std::vector<BatchBest> best_per_batch(const std::vector<BatchTrial>& trials);

/// Which of a curve's points a report keeps: `attempts[i]` is the attempt of point i (points
/// in attempt, then report order). At most about `cap` points, evenly spaced, and always the
/// first and last point of every attempt, so each attempt of a retried trial keeps its start
/// and end (a curve of n <= cap points keeps all; the result may exceed cap by the attempts'
/// ends). Ascending indices.
std::vector<std::size_t> thin_by_attempt(const std::vector<int>& attempts, std::size_t cap);

struct ThroughputTrial {
  double batch = 0;
  double ranks = 1, threads = 1;
  double samples_per_s = 0;
};

struct ScalingPoint {
  double ranks = 1;
  double samples_per_s = 0;             ///< mean over the trials of this shape
  std::size_t trials = 0;
  std::optional<double> efficiency;     ///< T(N) / (N * T(smallest N)) * smallest N; empty without a base
  std::optional<double> speedup;        ///< T(N) / T(smallest N)
};

struct ScalingSeries {
  double batch = 0, threads = 1;
  std::vector<ScalingPoint> points;     ///< ranks ascending
};

/// Throughput over ranks at a fixed global batch and threads per rank (strong scaling):
/// one series per (batch, threads), efficiency relative to the series' smallest rank count.
std::vector<ScalingSeries> scaling_over_ranks(const std::vector<ThroughputTrial>& trials);

}  // namespace dlsweep::report
