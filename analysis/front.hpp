// front.hpp — the answer of a study with several objectives: the Pareto front of its seed
// groups, feasible first. `dlsweep best`, `best --explain` and `results` take it from here
// (for one objective, analysis/ranking.hpp stays the one ranking). Pure. The rules:
//
//  1. Only COMPLETE trials count, each with a value of every objective
//     (common/multi_objective.hpp: reported metrics at their best, derived figures); the rest
//     are counted (left_out: by state, and "NO VALUE" for COMPLETE ones missing a value).
//  2. Seed groups (analysis/seed_groups.hpp): a group's values are the means over its seeds,
//     its violation the largest of its seeds' total violations (constraints: Optuna's
//     constraints_func; a seed that breaks one makes the configuration infeasible).
//  3. The groups are sorted into fronts by Deb's constrained domination: feasible groups by
//     Pareto domination, all of them before any infeasible one, infeasible ones by violation.
//     The Pareto front is the first front when it is feasible; an infeasible group never is
//     on it (no feasible group: the front is empty and `best` says so).
//  4. Points of the front are listed by the first objective, best first, ties in trial order;
//     each names its group's first trial and lists the seeds.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/study_data.hpp"

namespace dlsweep::analysis {

struct FrontPoint {
  std::size_t trial = 0;              ///< index into study.trials: the group's first trial
  std::vector<std::size_t> members;   ///< the group's trials (indices), in trial order
  std::vector<double> values;         ///< mean over the seeds, per objective
};

struct ParetoFront {
  std::vector<ObjectiveDef> objectives;
  std::size_t complete = 0;           ///< COMPLETE trials
  std::size_t feasible = 0;           ///< of which satisfy every constraint (all, without constraints)
  std::vector<std::pair<std::string, std::size_t>> left_out;  ///< by state, then "NO VALUE"
  std::vector<FrontPoint> points;     ///< the front, by the first objective, best first
  /// Per study.trials: its front rank (0: the Pareto front) when it ranks; nullopt otherwise.
  /// Infeasible groups rank after every feasible one.
  std::vector<std::optional<std::size_t>> rank;
  std::vector<std::optional<std::vector<double>>> values;  ///< per study.trials: its own values
  std::vector<double> violation;      ///< per study.trials: its total violation (0 feasible)

  bool on_front(std::size_t trial) const { return rank[trial] && *rank[trial] == 0 && violation[trial] <= 0; }
};

ParetoFront pareto_front(const StudyData& study);

/// The hypervolume of the front of the first n COMPLETE feasible trials (in trial order),
/// for n = 1..: how the search progressed (reference: the worst value of each objective over
/// those trials, 10% beyond). One entry per such trial; the study's trial number with it.
std::vector<std::pair<std::int64_t, double>> hypervolume_over_trials(const StudyData& study);

/// "val_acc 0.91 (max), time_to_target_s 412 (min)": what a point trades, in words, against
/// its neighbours on the front (`best --explain`). One line per point.
std::vector<std::string> explain_front(const StudyData& study, const ParetoFront& front);

}  // namespace dlsweep::analysis
