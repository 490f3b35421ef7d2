// auto_sampler.hpp — `search.algorithm: auto`: the algorithm chosen per proposal as Optuna's
// AutoSampler (OptunaHub, 2024) chooses it, and the sampler that delegates to it.
//
// The rule (choose_algorithm, pure):
//  - a conditional space (`when:`) or a categorical parameter: tpe (multivariate when the
//    space has no conditions), which models both;
//  - otherwise, before trial 250: gp;
//  - from trial 250: nsga2 with several objectives or constraints (CMA-ES has neither),
//    else cmaes.
// The count is the trial's number (0-based, warm-start trials not counted), so resume decides
// as the uninterrupted run did. `reason` is the line the engine logs and `best --explain`
// shows: "gp (numeric space, 12 trials < 250)".
//
// The delegates are built once with their defaults; `options` of auto are the switch point
// (`auto_gp_trials`, 250). Every delegate sees the whole history, so a switch to cmaes starts
// from what gp found (its generations are cut from all COMPLETE trials).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "search/options.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

struct AutoChoice {
  std::string algorithm;  ///< "gp" | "tpe" | "cmaes" | "nsga2"
  std::string reason;     ///< "gp (numeric space, 12 trials < 250)"
};

/// What auto uses for trial `number` of a study with `objectives` objectives.
AutoChoice choose_algorithm(const Space& space, std::int64_t number, std::size_t objectives, bool constrained,
                            std::int64_t gp_trials = 250);

class AutoSampler final : public Sampler {
 public:
  AutoSampler(Space space, std::uint64_t seed, std::int64_t gp_trials);
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "auto"; }
  /// The choice for trial `number` under `history` (what next() delegates to).
  AutoChoice choice(std::int64_t number, const History& history) const;
  std::string chosen(std::int64_t number, const History& history) const override { return choice(number, history).reason; }

 private:
  Space space_;
  std::int64_t gp_trials_;
  std::unique_ptr<Sampler> gp_, tpe_, cmaes_, nsga2_;
};

}  // namespace dlsweep::search
