// nsga2_sampler.hpp — NSGA-II (Deb, Pratap, Agarwal, Meyarivan 2002), with Optuna's
// NSGAIISampler (3.1) semantics for the genetic operators:
//
//  - Generations by trial number: trial n belongs to generation n / population_size.
//    Generation 0 is scrambled Sobol points with several objectives (`startup: qmc`; the
//    random sampler's draw for n with one objective or `startup: random`). The parents of generation g
//    are the elite of (the COMPLETE trials of generation g-1) united with (the parents of
//    generation g-1): fronts by non-dominated sort, whole fronts while they fit, the last
//    one cut by crowding distance (largest first; ties in trial order). Recomputed from the
//    history on every call, so nothing but the history is state (resume draws the same).
//    Optuna moves on once population_size trials of a generation are COMPLETE; numbering
//    by trial number is what keeps the draw a pure function of (seed, number, history)
//    when trials run in parallel; a generation with too few COMPLETE trials yet breeds from
//    what there is (random when there are no parents at all).
//  - A child: with probability crossover_prob, two parents each picked by binary tournament
//    (two random members; the first if it dominates the second, else the second; the second
//    parent is drawn from the others) and uniform crossover (each parameter from the second
//    parent with probability swapping_prob); otherwise a copy of a parent chosen uniformly. Then each parameter is mutated — redrawn at random —
//    with probability mutation_prob (default 1 / number of parameters). A parameter no
//    parent has (a conditional one) or one outside the space is drawn at random.
//  - `crossover:` other than uniform (nsga2_crossover.hpp: blx_alpha, sbx, vsbx, undx, spx, as
//    Optuna's NSGAIISampler(crossover=...)): crossover_parents(kind) parents, each by binary
//    tournament among the parents not yet chosen; the numerical parameters all of them hold
//    are crossed as one vector in the transformed space, categorical ones come from the
//    first or the last parent (first with swapping_prob); a float child below its low means
//    new parents and another try (Optuna's retry loop). Then the same mutation.
//  - Constraints (History::constrained): Deb's constrained domination everywhere — feasible
//    before infeasible, infeasible by total violation (Optuna's constraints_func).
//  - One objective works too (domination of the single value).
// Randomness: SplitMix64 streams keyed by (seed, number); no state across calls.
#pragma once

#include <cstdint>
#include <optional>

#include "search/nsga2_crossover.hpp"
#include "search/options.hpp"
#include "search/qmc_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

struct Nsga2Options {
  std::int64_t population_size = 50;
  double crossover_prob = 0.9;
  std::optional<double> mutation_prob;  ///< nullopt: 1 / number of parameters of the child
  double swapping_prob = 0.5;
  /// Generation 0 (and a generation with no parents) from scrambled Sobol points or
  /// independent uniform draws (`startup:`, qmc_sampler.hpp read_startup; unset: Sobol with
  /// several objectives).
  std::optional<bool> startup_qmc;
  CrossoverOptions crossover;  ///< `crossover:` and its parameters (default uniform)

  static Nsga2Options read(OptionReader& r);
};

class Nsga2Sampler final : public Sampler {
 public:
  Nsga2Sampler(Space space, std::uint64_t seed, Nsga2Options options);
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "nsga2"; }

 private:
  Space space_;
  std::uint64_t seed_;
  Nsga2Options o_;
  RandomSampler random_;
  /// A trial of generation 0 (or of a generation without parents).
  std::optional<Params> first_draw(std::int64_t number, const History& history);
  std::optional<QmcSampler> qmc_;  ///< set when the space allows Sobol points
};

}  // namespace dlsweep::search
