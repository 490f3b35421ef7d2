// sampler.hpp — the Sampler interface: given the space, the seed and the history, the
// params of the next trial.
//
// Contract (what makes `dlsweep resume` exact):
//  - pure: no I/O, no clock, no global RNG. Same (space, seed, number, history) -> same
//    params, on every run and every machine.
//  - `number` is the 0-based index of the trial in the study. Samplers that ignore the
//    history (grid, random) return the same params for a number whatever happened before.
//  - next() returns std::nullopt when the sampler has nothing more to propose (a grid is
//    exhausted); the study then stops creating trials.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "search/search_space.hpp"

namespace dlsweep::search {

/// What a sampler may know of a finished or running trial.
struct TrialRecord {
  std::int64_t number = 0;
  Params params;
  bool finished = false;
  std::optional<double> value;  ///< objective value, if reported
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The params of trial `number` (fixed params merged in), or nullopt if exhausted.
  virtual std::optional<Params> next(std::int64_t number, std::span<const TrialRecord> history) = 0;
  /// How many trials this sampler can propose in all, if finite (grid); nullopt otherwise.
  virtual std::optional<std::int64_t> size() const = 0;
  virtual std::string name() const = 0;
};

enum class Algorithm { grid, random };

/// Builds a sampler. grid requires every dimension to be finite (choice or int_range);
/// the study validator checks that before calling.
std::unique_ptr<Sampler> make_sampler(Algorithm algo, const Space& space, std::uint64_t seed);

}  // namespace dlsweep::search
