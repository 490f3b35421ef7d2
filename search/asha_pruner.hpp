// asha_pruner.hpp — asynchronous successive halving (Li et al. 2020, "A System for
// Massively Parallel Hyperparameter Tuning"; Optuna's SuccessiveHalvingPruner) and
// Hyperband over it (Li et al. 2018; Optuna's HyperbandPruner).
//
// ASHA: rungs at r_k = min_resource · η^(s + k) on the axis (s = min_early_stopping_rate).
// At the report where a trial first reaches r_k, its best value so far is compared with
// the best-so-far of every trial of the study that reached r_k (running, complete or
// pruned, each at its own first report there) — with `objective.rank_by: final`
// (History::rank_final), the values reported there instead, as Optuna compares; it goes
// on only if it is in the top ⌊n/η⌋ of those n (or is the best of them while n < η), else it is pruned. A decision is
// taken once per rung, at that report — later arrivals never prune a promoted trial.
// Rungs at or beyond max_resource (when given) do not prune.
// Options: min_resource (default 1), reduction_factor η (default 3, >= 2),
// min_early_stopping_rate s (default 0), max_resource (optional).
//
// Hyperband: brackets i = 0 .. B−1, B = ⌊log_η(max_resource/min_resource)⌋ + 1; bracket i
// is an ASHA with s = i whose rungs only see the trials of the same bracket. Trial n's
// bracket is a hash of n weighted by each bracket's budget ⌈B·η^(B−1−i)/(B−i)⌉ (as
// Optuna), so the assignment is fixed by the trial number. Options: min_resource
// (default 1), max_resource (required), reduction_factor (default 3).
#pragma once

#include <optional>

#include "search/pruner.hpp"

namespace dlsweep::search {

struct AshaOptions {
  double min_resource = 1;
  double reduction_factor = 3;
  std::int64_t min_early_stopping_rate = 0;
  std::optional<double> max_resource;
};

class AshaPruner final : public Pruner {
 public:
  AshaPruner(PrunerBasics basics, AshaOptions options);
  PruneDecision judge(const TrialRecord& trial, const History& history) const override;
  std::string name() const override { return "asha"; }
  Axis axis() const override { return b_.by; }
  /// Position of rung k.
  double rung(std::int64_t k) const;

 private:
  PrunerBasics b_;
  AshaOptions o_;
};

class HyperbandPruner final : public Pruner {
 public:
  HyperbandPruner(PrunerBasics basics, double min_resource, double max_resource, double reduction_factor);
  PruneDecision judge(const TrialRecord& trial, const History& history) const override;
  std::string name() const override { return "hyperband"; }
  Axis axis() const override { return b_.by; }
  std::size_t brackets() const { return brackets_.size(); }
  /// The bracket of trial `number`.
  std::size_t bracket_of(std::int64_t number) const;

 private:
  PrunerBasics b_;
  std::vector<AshaPruner> brackets_;
  std::vector<std::int64_t> budget_;  ///< cumulative budgets
};

}  // namespace dlsweep::search
