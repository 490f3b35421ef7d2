// pruner.hpp — the Pruner interface: should this running trial stop now, given the
// history of the study? And the registry that makes one by kind.
//
// Contract:
//  - pure: no I/O, no clock. The same (trial, history) gives the same decision.
//  - `trial` is the running trial with its curve so far; `history` holds every trial of
//    the study (the trial itself may be among them: pruners skip its number).
//  - the engine asks after every report of the objective; pruners that decide once per
//    milestone (asha, hyperband) decide at the report that reaches it.
//  - every pruner compares on the axis `by` (epoch | step | samples | wall_s) and prunes
//    nothing before `warmup` on that axis; `group_by: [params]` makes any pruner compare
//    a trial only with trials that share those params' values (GroupByPruner).
#pragma once

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/history.hpp"
#include "search/options.hpp"

namespace dlsweep::search {

struct PruneDecision {
  bool prune = false;
  double at = 0;        ///< the trial's latest position on the axis
  std::string reason;   ///< why ("best 0.41 is worse than the median 0.52 of 7 completed trials")
};

/// What every pruner shares: the axis and the warmup.
struct PrunerBasics {
  Axis by = Axis::epoch;
  double warmup = 0;
};

class Pruner {
 public:
  virtual ~Pruner() = default;
  virtual PruneDecision judge(const TrialRecord& trial, const History& history) const = 0;
  virtual std::string name() const = 0;
  virtual Axis axis() const = 0;
};

using PrunerResult = std::expected<std::unique_ptr<Pruner>, std::vector<OptionError>>;

/// The registry: "none", "median", "percentile", "threshold", "asha", "hyperband".
/// `options`: the keys of the study's `pruner:` section other than `kind` (object or
/// null). Shared keys: by (default epoch), warmup (default 0: Optuna's n_warmup_steps),
/// group_by (wraps the pruner in GroupByPruner). Errors name the option's key.
PrunerResult make_pruner(const std::string& kind, const nlohmann::json& options = nullptr);
std::vector<std::string_view> pruner_names();
/// The keys a kind takes besides kind, by, warmup and group_by (empty when unknown).
std::vector<std::string_view> pruner_option_keys(const std::string& kind);
/// warmup when the study gives none: 0 (Optuna's n_warmup_steps; median/percentile had 1 before
/// issue 43, and a stored study keeps the warmup it was stored with).
double pruner_default_warmup(const std::string& kind);

/// The best value of `t`'s curve among points at position <= x (+1e-9) on `axis`.
std::optional<double> best_until(const TrialRecord& t, Axis axis, double x, bool maximize);

/// A pruner that never prunes (`kind: none`).
class NonePruner final : public Pruner {
 public:
  PruneDecision judge(const TrialRecord&, const History&) const override { return {}; }
  std::string name() const override { return "none"; }
  Axis axis() const override { return Axis::epoch; }
};

}  // namespace dlsweep::search
