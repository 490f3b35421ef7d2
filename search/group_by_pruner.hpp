// group_by_pruner.hpp — `group_by: [params]` over any pruner: the inner pruner sees only
// the trials whose values of those params equal the judged trial's (an absent param
// counts as null). For schedule sweeps, `group_by: [batch_size]` compares each trial with
// trials of its own batch size, since neither epochs nor steps are neutral across batch
// sizes.
#pragma once

#include <string>
#include <vector>

#include "search/pruner.hpp"

namespace dlsweep::search {

class GroupByPruner final : public Pruner {
 public:
  GroupByPruner(std::unique_ptr<Pruner> inner, std::vector<std::string> keys);
  PruneDecision judge(const TrialRecord& trial, const History& history) const override;
  std::string name() const override { return inner_->name(); }
  Axis axis() const override { return inner_->axis(); }

 private:
  std::unique_ptr<Pruner> inner_;
  std::vector<std::string> keys_;
};

}  // namespace dlsweep::search
