// pbt_sampler.hpp — population-based training (Jaderberg et al. 2017) as a sampler.
//
// A PBT study of population P runs G generations ("intervals"). Trial number n is member
// m = n % P of generation g = n / P and trains one interval of its member, [g*every,
// (g+1)*every) on the interval's axis: generation 0 from scratch with params drawn at random
// (the random sampler's stream: RandomSampler(space, seed)), generation g > 0 from a
// checkpoint of its parent (a trial of generation g-1; the engine copies it).
//
// Generation g > 0 is decided from generation g-1 only, once every trial of it has
// finished (ready() is false until then: the engine creates no trial meanwhile):
//  - ranking: by the objective's last reported value in the interval (the curve's last
//    point; the trial's value when it has no curve), best first by the study's direction;
//    trials with no value (failed, pruned, cancelled, missing) rank last; ties by number.
//  - quantile: k = ceil(quantile * P), at most floor(P / 2) (Ray Tune's rule), so k >= 1
//    for every P >= 2. The top k ranks are the donors; the bottom k ranks exploit.
//  - exploit: a member of the bottom k, and any member whose previous trial has no value,
//    copies the params (and the engine the checkpoint) of a donor chosen uniformly among
//    the top k donors that have a value, then explores: each `perturb` key present is
//    multiplied by a factor chosen uniformly from its list (Ray Tune's semantics),
//    clamped into the dimension's range (int ranges rounded onto their step; log ranges
//    alike); a choice dimension (numeric values) moves to the neighbouring value, sorted
//    by value, below for a factor < 1, above for a factor > 1 (it stays at an end).
//    With resample_probability P > 0 (Ray Tune's resample_probability; default 0 here),
//    each key is instead, with probability P, resampled: a fresh draw from its dimension's
//    distribution (the random sampler's draw_value), recorded under "resampled", not
//    "factors". P = 0 draws nothing for it: the stream is exactly the factors' alone.
//    Two exploiters of one generation never make the same draw while another is left — a
//    draw is (donor, factors), with P > 0 (donor, explored values: a factor's and a
//    resampled value that agree are one draw) — a repeat of a lower member's draw is drawn
//    again, so no two members become clones (same checkpoint, same params, the same run twice).
//  - every other member keeps its own params; its parent is its own previous trial.
// Randomness is keyed by (seed, number) (SplitMix64 streams), and the history is read by
// trial number, so any history order and any restart give the same trial.
//
// What the engine records besides params (never part of them): lineage(), a JSON object
// {"member", "generation", "axis", "start", "end", "parent" (number or null), "rank" (the
// 0-based rank of the member's own previous trial, generation > 0; not the donor's), "exploit": null or {"from": donor number,
// "from_member", "factors": {key: factor}, "resampled": {key: value} (present only when a
// key was resampled)}}.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

struct PbtOptions {
  std::int64_t population = 0;
  std::int64_t generations = 0;
  Axis axis = Axis::epoch;               ///< interval.by: epoch | step | samples
  double every = 0;                      ///< interval.every: the interval's length on the axis
  double quantile = 0.25;
  double resample_probability = 0;       ///< per perturb key: P(resample instead of a factor)
  std::map<std::string, std::vector<double>> perturb;  ///< key -> factors (> 0)

  /// Reads population, generations, interval, quantile, resample_probability and perturb, and checks them against
  /// the space (perturb keys must be numeric dimensions without `when:`).
  static PbtOptions read(OptionReader& r, const Space& space);
  /// k: how many members are donors (top) and how many exploit (bottom).
  std::int64_t quantile_count() const;
};

class PbtSampler final : public Sampler {
 public:
  PbtSampler(Space space, std::uint64_t seed, PbtOptions options);

  std::optional<Params> next(std::int64_t number, const History& history) override;
  /// False while generation g-1 of `number`'s generation has a trial missing or running.
  bool ready(std::int64_t number, const History& history) const override;
  nlohmann::json lineage(std::int64_t number, const History& history) const override;
  std::optional<std::int64_t> size() const override { return options_.population * options_.generations; }
  std::string name() const override { return "pbt"; }

  const PbtOptions& options() const { return options_; }

  /// One decision, params and lineage together.
  struct Step {
    Params params = Params::object();
    nlohmann::json lineage;
  };
  /// The decision for trial `number` (nullopt past the budget or when not ready).
  std::optional<Step> step(std::int64_t number, const History& history) const;

 private:
  Space space_;
  std::uint64_t seed_;
  PbtOptions options_;
  RandomSampler random_;
};

/// The value PBT ranks a finished trial by (nullopt: ranks last).
std::optional<double> pbt_score(const TrialRecord& t);

}  // namespace dlsweep::search
