// cmaes_sampler.hpp — CMA-ES (`search.algorithm: cmaes`) with IPOP restarts and a warm start
// from finished trials, for continuous and integer parameters, after Optuna's CmaEsSampler.
//
// The numeric unconditional dimensions are searched in [0, 1]^n (log where the space says so;
// an int is rounded to the nearest value of its range); choices and parameters under `when:`
// are drawn as the random sampler draws them for the trial. The state is rebuilt for every
// proposal from the history, so the sampler stays pure and `resume` exact: the COMPLETE trials
// (number >= 0), in trial-number order, are cut into generations of λ, each told to the state
// in turn (search/cmaes.hpp); after a generation that meets IPOP's stop test
// (`restart_strategy: ipop`, the default) a new run starts with λ × `inc_popsize` from a mean
// drawn for that restart. Trial n is a draw from the state for a stream keyed by (seed, n).
//
// Warm start: COMPLETE trials with numbers < 0 (`search.warm_start`: an earlier study's) set
// the first run's mean, step size and covariance from their best `warm_start_fraction` (at
// least 2), as the warm-starting CMA-ES of Nomura et al. (2021) does with a single Gaussian.
//
// Constraints: infeasible trials rank after the feasible ones of their generation, by total
// violation. Several objectives: the first objective's loss (use nsga2 or tpe to search a
// front).
#pragma once

#include <cstdint>

#include "search/options.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

struct CmaesOptions {
  double sigma0 = 1.0 / 6.0;          ///< initial step size in the unit box (Optuna: range / 6)
  std::int64_t popsize = 0;           ///< λ of the first run; 0: 4 + ⌊3 ln n⌋
  bool ipop = true;                   ///< restart_strategy: ipop | none
  double inc_popsize = 2.0;
  double warm_start_fraction = 0.1;

  static CmaesOptions read(OptionReader& r);
};

class CmaesSampler final : public Sampler {
 public:
  CmaesSampler(Space space, std::uint64_t seed, CmaesOptions options);
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "cmaes"; }

 private:
  Space space_;
  std::uint64_t seed_;
  CmaesOptions o_;
  RandomSampler random_;
};

}  // namespace dlsweep::search
