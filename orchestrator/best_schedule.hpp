// best_schedule.hpp — picks the best large-batch schedule of a study and says why.
//
// Criteria, in the order `auto` tries them:
//   time   — least wall time to reach the objective target (needs a target; the question
//            the user came with: which schedule gets to 88% soonest?)
//   steps  — fewest optimizer steps to the target (the Shallue et al. steps-to-result view)
//   value  — best objective value reached (max or min by the study's mode)
// `auto` uses time when a target is set and at least one trial reached it, else value.
// Only COMPLETE trials can win: a trial that reached the target and then diverged, crashed
// or was pruned is no schedule to recommend. The others are counted by state ("left out").
// Seeds: trials whose params differ only in `seed` are ranked by their configuration's mean
// over its COMPLETE seeds, so a lucky seed does not beat a better mean; the trial named is the
// best seed of the best configuration. A configuration with a COMPLETE seed that did not
// reach the target cannot win by time or steps (analysis/seed_groups.hpp).
// Time: when `pooled` gives a trial's time to target pooled over the trials that train at
// its speed (analysis/pooled_time.hpp), the ranking uses it, so a trial's timing luck on a
// shared node does not decide between schedules that reach the target at the same step.
// Pure: works on the trial summaries (and the pooled times) only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::orch {

enum class BestBy { automatic, time, steps, value };
Result<BestBy> parse_best_by(const std::string& s);

struct BestChoice {
  std::size_t index = 0;        ///< into the summaries given
  BestBy criterion = BestBy::value;
  std::vector<std::string> explanation;  ///< human sentences, most important first
};

struct BestOutcome {
  std::optional<BestChoice> choice;  ///< nullopt: no COMPLETE trial has a usable value
  std::size_t eligible = 0;          ///< COMPLETE trials
  /// Trials that could not win, by state ("FAILED" -> 3), in state order.
  std::vector<std::pair<std::string, std::size_t>> left_out;
  /// "left out: 3 FAILED, 2 PRUNED (only COMPLETE trials can win)"; empty when none was.
  std::string left_out_text() const;
};

/// A trial's time to target pooled over its speed group: the median and how many trials.
struct PooledSeconds {
  double seconds = 0;
  int trials = 1;
};

/// Params as text for people: "base_lr=0.02104, batch_size=256" — numbers to 4 significant
/// digits (JSON output keeps them whole); `only`: just the keys it holds.
std::string params_brief(const nlohmann::json& params, const nlohmann::json* only = nullptr);

/// `pooled`: trial number -> pooled time to target (none: rank by each trial's own time).
BestOutcome choose_best(const std::vector<db::TrialSummary>& trials, const std::string& metric,
                        const std::string& mode, std::optional<double> target, BestBy by,
                        const std::map<std::int64_t, PooledSeconds>& pooled = {});

}  // namespace dlsweep::orch
