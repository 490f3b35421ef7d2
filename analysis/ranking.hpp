// ranking.hpp — the one ranking of a study's schedules: the criterion, which trials can win,
// and the order of the seed groups and of their seeds. `dlsweep best`, `best --explain` and
// the report ("best" and the LR chart's trials) all take it from here; none ranks on its own
// (docs/architecture.md). Pure: a StudyData in, a Ranking out. The rules, in order:
//
//  1. Criterion. `--by auto` is time when the study has a target and a COMPLETE trial reached
//     it, else value. time or steps without a target is value. time or steps with a target
//     that no COMPLETE trial reached stays what was asked and has no winner (`--by value`
//     ranks those trials).
//  2. Only COMPLETE trials rank: a trial that reached the target and then diverged, crashed
//     or was pruned is no schedule to recommend. The others are counted by state (left_out).
//  3. Seed groups (analysis/seed_groups.hpp): COMPLETE trials whose params differ only in
//     `seed` are one configuration. A group ranks only when every member has a finite value
//     of the criterion: a configuration that missed the target on some seed is not faster.
//  4. A trial's value: time — its time to target pooled over the trials that train at its
//     speed (analysis/pooled_time.hpp; its own time when there is none); steps — steps to
//     target; value — its objective value: its best report, or with `objective.rank_by:
//     final` its final report (StudyData::objective_value). NaN and inf are no value.
//  5. Groups, best first: by the mean of their values over seeds (lower time and steps; by the
//     study's mode for value), so a lucky seed does not win over a better mean; ties go to
//     the mean of the own times to target (time, steps: the tie of pooled times at one step
//     goes to the own readings), then to the group whose best seed is better by rule 6, then
//     to trial order.
//  6. Seeds within a group, best first (the one `best` names): time — (value, steps, own
//     time); steps — (steps, own time); value — the value, then the trial that finished first
//     (Optuna's best_trial keeps the first of equal values to complete); other ties in trial order.
//  7. Constraints (`constraints:`, common/multi_objective.hpp; Optuna's constraints_func): a
//     group's violation is the largest total violation of its seeds. Feasible groups come
//     first (by rules 5-6), then infeasible ones by violation; an infeasible group never
//     wins (no feasible group: no winner). Studies of several objectives: analysis/front.hpp.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/pooled_time.hpp"
#include "analysis/seed_groups.hpp"
#include "analysis/stats.hpp"
#include "analysis/study_data.hpp"
#include "common/result.hpp"

namespace dlsweep::analysis {

enum class Criterion { time, steps, value };
/// What was asked for (`dlsweep best --by`); rule 1 turns it into a Criterion.
enum class RankBy { automatic, time, steps, value };

/// "auto", "time", "steps", "value"; the error names the flag `--by`.
Result<RankBy> parse_rank_by(const std::string& s);
/// "time-to-target", "steps-to-target", "best value" ("final value" with `final`: rank_by final).
std::string criterion_name(Criterion c, bool final = false);

/// A seed group that ranks.
struct RankedGroup {
  std::size_t group = 0;             ///< index into Ranking::groups
  std::vector<std::size_t> members;  ///< indices into study.trials, best seed first (rule 6)
  std::vector<double> values;        ///< the ranking value of each member (pooled seconds, steps, value)
  std::vector<double> own;           ///< each member's own reading (own seconds by time; else = values)
  Stat value;                        ///< of values: `mean` is what the group is ranked by
  Stat own_stat;                     ///< of own: the seed spread of the readings themselves
  double violation = 0;              ///< rule 7: > 0 infeasible (ranked after every feasible group)
};

struct Ranking {
  Criterion criterion = Criterion::value;
  bool maximize = false;      ///< higher values rank first (criterion value, mode max)
  bool final = false;         ///< the study ranks by each trial's final report (objective.rank_by: final)
  std::size_t complete = 0;   ///< COMPLETE trials
  std::size_t reached = 0;    ///< of which reached the target
  /// Trials that cannot win, by state ("FAILED" -> 3), in the order FAILED, PRUNED,
  /// CANCELLED, RUNNING, QUEUED, WAITING.
  std::vector<std::pair<std::string, std::size_t>> left_out;
  /// Per study.trials: its pooled time to target (as given to rank(), nullopt where none).
  std::vector<std::optional<PooledTime>> pooled;
  std::vector<SeedGroup> groups;                  ///< every COMPLETE trial's seed group
  std::vector<RankedGroup> order;                 ///< the groups that rank, best first

  /// The best seed of the best group (an index into study.trials); nullopt: no winner.
  std::optional<std::size_t> winner() const;
  /// Every ranked trial, best first: the groups in order, each group's seeds in order.
  std::vector<std::size_t> trials() const;
  /// Whether Ranking::groups[g] ranks.
  bool ranks(std::size_t g) const;
};

/// Rule 1 alone: the criterion `by` means for a study with `target` of which `reached`
/// COMPLETE trials reached it.
Criterion resolve_criterion(RankBy by, bool has_target, std::size_t reached);

Ranking rank(const StudyData& study, RankBy by);
/// The same with the pooled times already computed (pooled_times_to_target(study)), for a
/// caller that ranks one study by several criteria.
Ranking rank(const StudyData& study, RankBy by, std::vector<std::optional<PooledTime>> pooled);

/// Whether trial `t` has a finite value of criterion `c` (rule 4: time and steps need the
/// target reached; value: its best report, or its final one when `final`), whatever its state.
bool has_value(const TrialData& t, Criterion c, bool final = false);

/// Every trial with a finite objective value (StudyData::objective_value), best first: the
/// ranked COMPLETE trials in the order of rank(study, RankBy::value), then the rest (COMPLETE
/// ones first) by their own value,
/// ties in trial order. What the report's LR chart picks its few trials from.
std::vector<std::size_t> best_value_order(const StudyData& study);

}  // namespace dlsweep::analysis
