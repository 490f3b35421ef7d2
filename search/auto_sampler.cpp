// auto_sampler.cpp — Optuna's AutoSampler rule, and the delegation.
#include "search/auto_sampler.hpp"

#include <fmt/format.h>

#include "search/cmaes_sampler.hpp"
#include "search/conditional.hpp"
#include "search/gp_sampler.hpp"
#include "search/nsga2_sampler.hpp"
#include "search/tpe_sampler.hpp"

namespace dlsweep::search {

AutoChoice choose_algorithm(const Space& space, std::int64_t number, std::size_t objectives, bool constrained,
                            std::int64_t gp_trials) {
  if (has_conditions(space)) return {"tpe", "tpe (conditional space)"};
  for (const auto& d : space.dims)
    if (d.kind == Dimension::Kind::choice) return {"tpe", fmt::format("tpe (categorical parameter '{}')", d.name)};
  if (number < gp_trials) return {"gp", fmt::format("gp (numeric space, {} trials < {})", number, gp_trials)};
  if (objectives > 1)
    return {"nsga2", fmt::format("nsga2 ({} objectives, {} trials >= {})", objectives, number, gp_trials)};
  if (constrained) return {"nsga2", fmt::format("nsga2 (constrained, {} trials >= {})", number, gp_trials)};
  return {"cmaes", fmt::format("cmaes (numeric space, {} trials >= {})", number, gp_trials)};
}

AutoSampler::AutoSampler(Space space, std::uint64_t seed, std::int64_t gp_trials)
    : space_(std::move(space)), gp_trials_(gp_trials) {
  gp_ = std::make_unique<GpSampler>(space_, seed, GpOptions{});
  TpeOptions t;
  t.multivariate = !has_conditions(space_);
  t.equal_height = !t.multivariate;
  tpe_ = std::make_unique<TpeSampler>(space_, seed, t);
  cmaes_ = std::make_unique<CmaesSampler>(space_, seed, CmaesOptions{});
  nsga2_ = std::make_unique<Nsga2Sampler>(space_, seed, Nsga2Options{});
}

AutoChoice AutoSampler::choice(std::int64_t number, const History& history) const {
  const std::size_t objectives = history.multi_objective() ? history.directions.size() : 1;
  return choose_algorithm(space_, number, objectives, history.constrained, gp_trials_);
}

std::optional<Params> AutoSampler::next(std::int64_t number, const History& history) {
  const auto c = choice(number, history);
  if (c.algorithm == "gp") return gp_->next(number, history);
  if (c.algorithm == "cmaes") return cmaes_->next(number, history);
  if (c.algorithm == "nsga2") return nsga2_->next(number, history);
  return tpe_->next(number, history);
}

}  // namespace dlsweep::search
