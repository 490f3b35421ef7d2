#include "orchestrator/cancel_targets.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace dlsweep::orch {

namespace {

bool unfinished(TrialState s) { return s == TrialState::waiting || is_active(s); }

}  // namespace

Result<CancelPlan> plan_cancel(const std::vector<db::TrialRow>& trials, const std::vector<long long>& named,
                               const std::string& study) {
  CancelPlan plan;
  if (named.empty()) {
    for (const auto& t : trials)
      if (unfinished(t.state)) plan.numbers.push_back(t.number);
    return plan;
  }
  std::vector<long long> unknown;
  for (long long n : named) {
    auto it = std::find_if(trials.begin(), trials.end(), [&](const db::TrialRow& t) { return t.number == n; });
    if (it == trials.end()) {
      if (std::find(unknown.begin(), unknown.end(), n) == unknown.end()) unknown.push_back(n);
      continue;
    }
    if (!unfinished(it->state)) {
      plan.notes.push_back(fmt::format("trial {} is already {}: left as it is", n, to_string(it->state)));
      continue;
    }
    if (std::find(plan.numbers.begin(), plan.numbers.end(), n) == plan.numbers.end()) plan.numbers.push_back(n);
  }
  if (!unknown.empty()) {
    std::string list;
    for (auto n : unknown) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
    std::string have = trials.empty() ? std::string("it has no trial yet")
                                      : fmt::format("it has trials 0 to {} so far", trials.size() - 1);
    return fail(fmt::format("no trial {} in study {} ({}; a trial that is not sampled yet cannot be cancelled)",
                            list, study, have),
                "--trial",
                fmt::format("`dlsweep status {}` lists its trials; `dlsweep cancel {}` without --trial stops the "
                            "whole study",
                            study, study));
  }
  return plan;
}

}  // namespace dlsweep::orch
