// qmc_sampler.hpp — quasi-random search: trial n takes point n of a scrambled Sobol
// sequence (search/sobol.hpp), one coordinate per dimension in study-file order, mapped
// to values by value_from_unit (ints and choices by cell, log ranges in log space).
//
// Deterministic by seed: the params of trial n depend only on (seed, n), never on the
// history. Options: `scramble` (default true). Conditional dimensions keep their
// coordinate and are dropped when inactive. Better coverage than random for the first
// tens of trials (Bergstra & Bengio 2012); Optuna's QMCSampler is the peer.
#pragma once

#include "search/options.hpp"
#include "search/sampler.hpp"
#include "search/sobol.hpp"

namespace dlsweep::search {

class QmcSampler final : public Sampler {
 public:
  QmcSampler(Space space, std::uint64_t seed, bool scramble);
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "qmc"; }

 private:
  Space space_;
  Sobol sobol_;
};

/// True when Sobol points can cover the space (at most Sobol::kMaxDims varied parameters).
bool qmc_fits(const Space& space);

/// The `startup:` option of the samplers that learn from history (tpe, nsga2): how their
/// first trials are drawn before there is anything to learn from: "qmc" (scrambled Sobol
/// points, which cover the space evenly; random draws beyond kMaxDims parameters) or
/// "random" (independent uniform draws, Optuna's way). Unset: qmc when the study has
/// several objectives, random with one (single-objective studies draw what they always did).
std::optional<bool> read_startup(OptionReader& r);

}  // namespace dlsweep::search
