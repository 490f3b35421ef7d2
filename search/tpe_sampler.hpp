// tpe_sampler.hpp — Tree-structured Parzen Estimator (Bergstra, Bardenet, Bengio, Kégl
// 2011), following Optuna's TPESampler (3.x) where the paper leaves choices open.
//
// For trial n: until `startup_trials` trials are COMPLETE or PRUNED, params are random
// (the random sampler's draw for n). Then the finished trials are ordered best first —
// COMPLETE by value, then PRUNED by how far they got and their best value, then (with
// `constant_liar`) RUNNING trials as if they were the worst — and the first
// min(ceil(gamma·N), gamma_cap) form "below" (good), the rest "above". Each side becomes a
// kernel mixture l(x), g(x) (search/parzen_estimator.hpp); `ei_candidates` draws from l
// are scored by log l − log g and the best is kept (maximising expected improvement).
//
// Scoring (`equal_height`, on by default when univariate): the draws come from l's
// mixture as is, but l and g are scored with each numeric kernel's weight multiplied by
// its bandwidth, i.e. every observation is a bump of the same height rather than of the
// same mass. That is what Optuna up to 3.4 computed (its truncated-normal density left out
// −log σ, optuna#5109; Debian ships 3.1): wide kernels — the prior, sparse regions — weigh
// more in both l and g, so g flattens towards the prior and the candidate nearest the good
// trials wins. bench_search_quality measured it better than equal mass on Branin and
// Hartmann-6 (median regret after 100 trials, 60 seeds: Hartmann 0.26 vs 0.39) and equal on
// the schedule function; `equal_height: false` gives the paper's and Optuna >= 3.5's
// normalised mixtures. With `multivariate` the product of bandwidths over dimensions would
// make the prior outweigh every observation, so there the default is off.
//
// Constraints (History::constrained; Optuna's constraints_func): the finished trials are
// ordered feasible first (as above), then infeasible by total violation, so an infeasible
// trial is "below" only when there are too few feasible ones.
//
// Several objectives (History::directions; multi-objective TPE, Ozaki et al. 2020/2022, as
// Optuna 3.1 splits): the feasible COMPLETE trials are ranked by non-domination; whole fronts
// go "below" while they fit, the front that does not fit is cut by greedy hypervolume
// contribution (reference 1.1 x its worst point); then infeasible ones by violation. PRUNED
// and RUNNING trials, and COMPLETE ones missing a value, go "above". The "below" kernels are weighted as Optuna 3.1 does: each
// trial's hypervolume contribution among the "below" trials over the largest (the prior
// keeps prior_weight).
//
// Univariate (default): each dimension on its own, in sampling order; a conditional
// dimension uses only the trials where it is present. `multivariate: true`: the
// unconditional dimensions are drawn jointly from one mixture over whole trials (Falkner
// et al. 2018's multivariate kernels, Optuna's multivariate=True); conditional ones stay
// univariate. Pure and order-free: randomness is a SplitMix64 stream keyed by (seed,
// number, dimension) and the history is sorted by trial number first.
#pragma once

#include <cstdint>

#include "search/options.hpp"
#include "search/qmc_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

struct TpeOptions {
  std::int64_t startup_trials = 10;
  std::int64_t ei_candidates = 24;
  double gamma = 0.1;             ///< fraction of finished trials that form "below"
  std::int64_t gamma_cap = 25;    ///< at most this many "below"
  double prior_weight = 1.0;
  bool multivariate = false;
  /// `multivariate` was written in the study. When it was not, a study with several
  /// objectives samples jointly (multivariate, equal_height off): measured better than
  /// the univariate default on every check of bench_multi_objective_quality.
  bool multivariate_given = false;
  bool equal_height_given = false;
  bool constant_liar = true;      ///< running trials count as the worst (parallel sweeps)
  /// Score candidates with every numeric kernel at the same peak height (weight x its
  /// bandwidth) instead of the same mass; default: on when univariate, off when multivariate.
  bool equal_height = true;
  /// How the startup trials are drawn (`startup:`, qmc_sampler.hpp read_startup): scrambled
  /// Sobol points or independent uniform draws; unset: Sobol with several objectives.
  std::optional<bool> startup_qmc;

  /// Reads and validates the `search:` keys of tpe.
  static TpeOptions read(OptionReader& r);
};

class TpeSampler final : public Sampler {
 public:
  TpeSampler(Space space, std::uint64_t seed, TpeOptions options);
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "tpe"; }

 private:
  Space space_;
  std::uint64_t seed_;
  TpeOptions o_;
  RandomSampler startup_;
  std::optional<QmcSampler> qmc_startup_;  ///< set when the space allows Sobol points
};

}  // namespace dlsweep::search
