// best_schedule.hpp — picks the best large-batch schedule of a study and says why.
//
// Criteria, in the order `auto` tries them:
//   time   — least wall time to reach the objective target (needs a target; the question
//            the user came with: which schedule gets to 88% soonest?)
//   steps  — fewest optimizer steps to the target (the Shallue et al. steps-to-result view)
//   value  — best objective value reached (max or min by the study's mode)
// `auto` uses time when a target is set and at least one trial reached it, else value.
// Pure: works on the trial summaries only.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

/// nullopt when no trial has a usable value (e.g. all failed).
std::optional<BestChoice> choose_best(const std::vector<db::TrialSummary>& trials, const std::string& metric,
                                      const std::string& mode, std::optional<double> target, BestBy by);

}  // namespace dlsweep::orch
