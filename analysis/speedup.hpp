// speedup.hpp — learning speedup, parallel speedup, scaling efficiency and their product,
// the time-to-solution speedup (docs/math.md#speedups; DeepEx, Yoginath et al. 2019: parallel
// speedup alone misleads when a bigger batch needs more samples).
//
// With S steps to target and t the time per step:
//   learning speedup  LS(B)  = S(B0) / S(B)           (B0: the smallest batch that reached it)
//   parallel speedup  PS     = t(baseline) / t(config) (per-step time; for equal global batch
//                                                      that is the throughput ratio)
//   time-to-solution  TTS    = LS x PS = T(baseline) / T(config) (training time only)
// Scaling over a resource (`ranks` or `threads`), from measured throughput X (samples/s):
//   strong (fixed global batch B):  speedup(P) = X(P)/X(P0), efficiency = speedup/(P/P0)
//   weak   (fixed per-worker batch B/P, ranks only): efficiency = X(P) / ((P/P0) X(P0))
// where P0 is the smallest resource count measured for that configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stats.hpp"
#include "analysis/study_data.hpp"
#include "analysis/target_table.hpp"

namespace dlsweep::analysis {

struct LearningSpeedup {
  std::int64_t batch = 0;
  double steps = 0;                 ///< best group's mean steps to target
  double learning_speedup = 0;      ///< S(B0) / S(B)
  std::optional<double> time_s;     ///< best group's mean time to target
  std::optional<double> time_speedup;  ///< T(B0) / T(B): the time-to-solution speedup
  std::optional<double> parallel_speedup;  ///< time_speedup / learning_speedup
};

/// One row per batch size of `table` that reached the target, relative to the smallest.
std::vector<LearningSpeedup> learning_speedups(const TargetTable& table);

/// One throughput measurement of a configuration.
struct ThroughputPoint {
  std::string config;        ///< what else is equal (params without the resource, batch, seed)
  int resources = 1;         ///< ranks or threads
  std::int64_t batch = 0;    ///< global batch
  double samples_per_s = 0;
};

struct ScalingRow {
  std::string config;
  std::int64_t batch = 0;          ///< global batch (strong) / of this row (weak)
  double per_worker_batch = 0;
  int resources = 1;
  Stat samples_per_s;              ///< over seeds/replicates
  double speedup = 1;              ///< vs the smallest resource count of the series
  double efficiency = 1;
};

struct ScalingTable {
  std::string resource;            ///< "ranks" | "threads"
  std::vector<ScalingRow> strong;  ///< series of equal (config, global batch)
  std::vector<ScalingRow> weak;    ///< series of equal (config, per-worker batch); ranks only
};

/// Pure tables from throughput points (series with a single resource count are left out).
ScalingTable scaling_table(const std::string& resource, const std::vector<ThroughputPoint>& points);

/// The tables for `ranks` and for `threads` of a study's COMPLETE trials, when the study
/// has more than one value of that resource (otherwise that table is absent).
std::vector<ScalingTable> scaling_tables(const StudyData& study);

}  // namespace dlsweep::analysis
