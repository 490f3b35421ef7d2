// history.hpp — what samplers and pruners know of a study: every trial with its params,
// status, value and whole intermediate curve, and the objective's direction.
//
// Plain data, filled by the engine (orchestrator/) from the database and the trials'
// reports. Samplers and pruners are pure functions of it: the same History gives the same
// params and verdicts, whatever order the trials are listed in (algorithms that care about
// order sort by trial number).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "search/search_space.hpp"

namespace dlsweep::search {

enum class TrialStatus { running, complete, pruned, failed };

/// One intermediate report of the objective. The four positions are the axes a pruner may
/// compare trials on (`by:`); value is the objective at that point.
struct CurvePoint {
  double step = 0, epoch = 0, samples = 0, wall_s = 0;
  double value = 0;
};

/// The pruning axis: what "the same point of training" means.
enum class Axis { epoch, step, samples, wall_s };

/// The position of `p` on `axis`.
double position(const CurvePoint& p, Axis axis);
/// "epoch" | "step" | "samples" | "wall_s"; nullopt for anything else.
std::optional<Axis> parse_axis(std::string_view word);
std::string_view axis_name(Axis axis);

struct TrialRecord {
  std::int64_t number = 0;
  Params params = Params::object();
  TrialStatus status = TrialStatus::running;
  std::optional<double> value;     ///< the trial's value: its best report, or its last with History::rank_final
  std::vector<CurvePoint> curve;   ///< reports in order; positions non-decreasing
  /// Several objectives (History::directions has 2+ entries): the trial's value of each, in
  /// the study's order; empty while unknown (running, or a value missing). Unused otherwise.
  std::vector<double> values;
  /// The study's constraints, one entry each, Optuna's constraints_func convention: <= 0
  /// satisfied, > 0 violated by that much. Empty when the study has none (or not yet known).
  std::vector<double> constraints;

  bool finished() const { return status != TrialStatus::running; }
};

struct History {
  std::vector<TrialRecord> trials;
  bool maximize = true;  ///< objective direction (single objective)
  /// Several objectives: true = maximise, per objective (TrialRecord::values). Empty or one
  /// entry: the single-objective study of `value` and `maximize`, exactly as before.
  std::vector<bool> directions;
  /// The study has constraints (TrialRecord::constraints is filled for finished trials).
  bool constrained = false;
  /// `objective.rank_by: final`: a trial's value is its last report, not its best (the
  /// engine fills TrialRecord::value so); ASHA compares the value reported at a rung, not
  /// the best so far. Median/percentile/threshold compare values at a step either way.
  bool rank_final = false;

  bool multi_objective() const { return directions.size() > 1; }

  /// True when a is strictly better than b for the direction.
  bool better(double a, double b) const { return maximize ? a > b : a < b; }
};

}  // namespace dlsweep::search
