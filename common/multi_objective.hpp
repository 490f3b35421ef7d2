// multi_objective.hpp — a study's objectives and constraints as plain data, and the one
// definition of a trial's value of each (shared by the engine, which feeds the samplers,
// and analysis/, which names the Pareto front for `best` and `results`).
//
// An objective is a metric the trial reports or one of the derived figures dlsweep computes
// for every trial (derived_figures()):
//   time_to_target_s, steps_to_target, samples_to_target — the first eval/final record at
//       which the first objective reached its target (the study's `time_to_target` view);
//   rank_seconds — ranks x the wall time of the trial's last record;
//   samples_per_s — the last reported `samples_per_s`, else samples / wall_s of the last
//       evaluation record.
// A reported metric's objective value is its best over the trial's eval/final records (by
// the objective's mode), or its last one with `rank_by: final` (ObjectiveDef::final), as for
// a single objective. A constraint on a reported metric reads
// its last value. Constraint values follow Optuna's constraints_func: <= 0 satisfied, > 0
// violated by that much; a figure the trial does not have violates by +inf.
// Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep {

struct ObjectiveDef {
  std::string metric;
  bool maximize = true;
  /// `rank_by: final`: a reported metric's value is its last eval/final report (Optuna's
  /// meaning: what the objective returned), not its best (the default). Derived figures
  /// have one value either way.
  bool final = false;
};

struct ConstraintDef {
  std::string metric;             ///< empty for reached_target
  std::optional<double> min, max; ///< the metric must stay within
  bool reached_target = false;    ///< the first objective must reach its target
};

/// The derived figures an objective or constraint may name.
std::span<const std::string_view> derived_figures();
bool is_derived_figure(std::string_view name);
/// Whether the figure needs the first objective's target (the *_to_target ones).
bool needs_target(std::string_view name);

/// What is known of one trial, whoever read it (engine: its curve; analysis: the database).
struct MetricRange {
  double last = 0, min = 0, max = 0;
};
struct TrialFigures {
  std::map<std::string, MetricRange> metrics;   ///< eval/final records, finite values only
  std::optional<double> steps_to_target, samples_to_target, time_to_target_s;
  std::optional<double> wall_s;                 ///< of the last record
  std::optional<double> last_samples, last_eval_wall_s;  ///< of the last eval/final record
  int ranks = 1;

  /// Folds one finite metric value in (the order of the records).
  void add_metric(const std::string& name, double value);
};

/// The value of `name` for a trial: a derived figure, else the reported metric (best by
/// `maximize` when `best`, else the last). nullopt when unknown.
std::optional<double> figure(const TrialFigures& t, const std::string& name, bool maximize, bool best);

/// The trial's objective vector; nullopt when any value is unknown or not finite.
std::optional<std::vector<double>> objective_values(const std::vector<ObjectiveDef>& objectives, const TrialFigures& t);
/// One entry per constraint (<= 0 satisfied).
std::vector<double> constraint_values(const std::vector<ConstraintDef>& constraints, const TrialFigures& t);

/// "rank_seconds <= 3600", "reached target": for messages.
std::string describe(const ConstraintDef& c);

}  // namespace dlsweep
