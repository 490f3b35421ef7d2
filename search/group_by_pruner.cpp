// group_by_pruner.cpp — filter the history to the trial's group, then ask the inner pruner.
#include "search/group_by_pruner.hpp"

#include <fmt/format.h>

namespace dlsweep::search {

GroupByPruner::GroupByPruner(std::unique_ptr<Pruner> inner, std::vector<std::string> keys)
    : inner_(std::move(inner)), keys_(std::move(keys)) {}

namespace {

nlohmann::json value_or_null(const Params& p, const std::string& k) {
  auto it = p.find(k);
  return it == p.end() ? nlohmann::json() : *it;
}

}  // namespace

PruneDecision GroupByPruner::judge(const TrialRecord& trial, const History& h) const {
  std::vector<nlohmann::json> group;
  for (const auto& k : keys_) group.push_back(value_or_null(trial.params, k));
  History mine;
  mine.maximize = h.maximize;
  mine.rank_final = h.rank_final;
  for (const auto& t : h.trials) {
    bool same = true;
    for (std::size_t i = 0; i < keys_.size() && same; ++i) same = value_or_null(t.params, keys_[i]) == group[i];
    if (same) mine.trials.push_back(t);
  }
  auto d = inner_->judge(trial, mine);
  if (d.prune) {
    std::string among;
    for (std::size_t i = 0; i < keys_.size(); ++i)
      among += fmt::format("{}{}={}", i ? ", " : "", keys_[i], group[i].dump());
    d.reason += fmt::format(" (among trials with {})", among);
  }
  return d;
}

}  // namespace dlsweep::search
