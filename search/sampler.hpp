// sampler.hpp — the Sampler interface: given the space, the seed and the history, the
// params of the next trial; and the registry that makes one by name.
//
// Contract (what makes `dlsweep resume` exact):
//  - pure: no I/O, no clock, no global RNG. Same (space, seed, options, number, history)
//    -> same params, on every run and every machine, whatever order the history lists the
//    trials in. Randomness comes from streams keyed by (seed, number), never from how many
//    times next() was called, so a fresh sampler after kill -9 draws what the old one would.
//  - `number` is the 0-based index of the trial in the study. Samplers that ignore the
//    history (grid, random, qmc) return the same params for a number whatever happened.
//  - params hold the fixed params and every *active* dimension (search/conditional.hpp);
//    an inactive conditional parameter is absent.
//  - next() returns std::nullopt when the sampler has nothing more to propose (a grid is
//    exhausted); the study then stops creating trials.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/history.hpp"
#include "search/options.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The params of trial `number` (fixed params merged in), or nullopt if exhausted.
  virtual std::optional<Params> next(std::int64_t number, const History& history) = 0;
  /// How many trials this sampler can propose in all, if finite (grid); nullopt otherwise.
  virtual std::optional<std::int64_t> size() const = 0;
  virtual std::string name() const = 0;
  /// False while trial `number` cannot be decided yet (pbt: the previous generation is still
  /// running): the engine then creates no further trial and asks again when a trial ends.
  virtual bool ready(std::int64_t /*number*/, const History& /*history*/) const { return true; }
  /// Bookkeeping the engine records with trial `number` (an event), never part of its
  /// params: pbt's lineage (search/pbt_sampler.hpp). null for every other sampler.
  virtual nlohmann::json lineage(std::int64_t /*number*/, const History& /*history*/) const { return nullptr; }
  /// `auto`: which algorithm proposes trial `number` and why, for the log and `best --explain`
  /// ("gp (numeric space, 12 trials < 250)", search/auto_sampler.hpp). Empty for every other sampler.
  virtual std::string chosen(std::int64_t /*number*/, const History& /*history*/) const { return {}; }
};

using SamplerResult = std::expected<std::unique_ptr<Sampler>, std::vector<OptionError>>;

/// The registry: "grid", "random", "qmc", "tpe", "nsga2", "pbt", "branch", "gp", "cmaes", "auto". `options` are the keys of the study's
/// `search:` section other than algorithm, trials and seed (an object, or null); the
/// sampler validates them, and the space against its needs (grid: finite dimensions).
/// Errors name the option's key ("" for the algorithm itself).
SamplerResult make_sampler(const std::string& algorithm, const Space& space, std::uint64_t seed,
                           const nlohmann::json& options = nullptr);

/// The names make_sampler knows, in registry order.
std::vector<std::string_view> sampler_names();

/// The option keys an algorithm takes besides algorithm, trials and seed (empty when unknown).
std::vector<std::string_view> sampler_option_keys(const std::string& algorithm);

/// True when the sampler needs `search.trials` (it never runs out on its own).
bool sampler_is_unbounded(const std::string& algorithm);

/// True when the sampler's proposals follow the history (tpe, nsga2, gp, cmaes, auto): what `search.warm_start`
/// needs (the others would ignore the earlier trials).
bool sampler_learns_from_history(const std::string& algorithm);

}  // namespace dlsweep::search
