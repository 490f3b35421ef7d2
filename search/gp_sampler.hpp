// gp_sampler.hpp — Gaussian-process Bayesian optimisation (`search.algorithm: gp`), after
// Optuna 4's GPSampler.
//
// For trial n: until `startup_trials` trials are COMPLETE, params are the startup draw
// (scrambled Sobol points where the space allows, else random; `startup:` as tpe). Then the
// unconditional dimensions are modelled jointly: each COMPLETE trial's params encoded
// (numeric in [0, 1], log where the space says so; ints by their cells; choices by index, an
// exchangeable kernel), its value turned into a loss (negated when maximising) and
// standardised; the kernel (search/gp_kernel.hpp) fitted by maximising the marginal
// likelihood (search/gp_fit.hpp) and log expected improvement (search/log_ei.hpp) maximised
// over the space (search/gp_acquisition.hpp). Parameters under `when:` and anything the model
// cannot hold are drawn as the random sampler draws them for n.
//
//  - Parallel trials (`constant_liar`, on by default): RUNNING trials enter the posterior at
//    its own mean (Kriging believer), so the next proposal moves away from them.
//  - Constraints (History::constrained): one GP per constraint; the acquisition adds each
//    constraint's log probability of feasibility; before any feasible trial it is that sum alone.
//  - Two or three objectives (`multi_objective: ehvi`, the default): one GP per objective
//    (its losses standardised), and the acquisition is the log of the expected hypervolume
//    improvement (search/gp_ehvi.hpp, exact) over the feasible trials' front, bounded by their
//    worst losses plus a tenth of each range; running trials join the front at their
//    predicted losses. More objectives, or `multi_objective: parego`: each trial's losses,
//    normalised over the finished trials, are scalarised by an augmented Chebyshev function
//    with weights drawn for n (ParEGO, Knowles 2006), and one GP models that scalar.
//  - Pure: every draw (startup, fit restarts, candidates, weights) comes from streams keyed
//    by (seed, n); the history is sorted by trial number first.
#pragma once

#include <cstdint>
#include <optional>

#include "search/options.hpp"
#include "search/qmc_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

struct GpOptions {
  std::int64_t startup_trials = 10;
  std::optional<bool> startup_qmc;      ///< `startup:` (qmc | random); unset: random, as Optuna's GPSampler
  std::int64_t candidates = 1024;       ///< random candidates scored per proposal
  std::int64_t local_starts = 4;        ///< L-BFGS-B runs from the best candidates
  std::int64_t fit_restarts = 1;        ///< kernel fits from random starts besides the default one
  bool deterministic_objective = false; ///< minimum noise 1e-9 instead of 1e-6
  bool constant_liar = true;            ///< running trials enter at the posterior mean
  bool ehvi = true;                     ///< `multi_objective:` ehvi (2-3 objectives) | parego

  /// Reads and validates the `search:` keys of gp.
  static GpOptions read(OptionReader& r);
};

class GpSampler final : public Sampler {
 public:
  GpSampler(Space space, std::uint64_t seed, GpOptions options);
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "gp"; }

 private:
  Space space_;
  std::uint64_t seed_;
  GpOptions o_;
  RandomSampler random_;
  std::optional<QmcSampler> qmc_startup_;
};

}  // namespace dlsweep::search
