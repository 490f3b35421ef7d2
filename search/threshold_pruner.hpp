// threshold_pruner.hpp — `threshold`: stop a trial whose latest value is below `lower`,
// above `upper`, or not finite (a diverged loss), once past `warmup` (Optuna's
// ThresholdPruner). Needs no other trial. Options: lower, upper (at least one is
// usual; with neither it stops only non-finite values).
#pragma once

#include <optional>

#include "search/pruner.hpp"

namespace dlsweep::search {

class ThresholdPruner final : public Pruner {
 public:
  ThresholdPruner(PrunerBasics basics, std::optional<double> lower, std::optional<double> upper);
  PruneDecision judge(const TrialRecord& trial, const History& history) const override;
  std::string name() const override { return "threshold"; }
  Axis axis() const override { return b_.by; }

 private:
  PrunerBasics b_;
  std::optional<double> lower_, upper_;
};

}  // namespace dlsweep::search
