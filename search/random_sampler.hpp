// random_sampler.hpp — independent random draws, reproducible per (seed, trial number).
//
// Every value is a pure function of (seed, trial number, dimension name): each dimension
// of each trial draws from its own SplitMix64 stream, so the params of trial n do not
// depend on history, on call order, on the other dimensions, or on the standard library
// (no std::*_distribution, whose output is implementation-defined). The 64-bit outputs are
// mapped to values here: doubles take the top 53 bits; integer ranges use rejection, so
// they are unbiased.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "search/sampler.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

/// SplitMix64 (Steele, Lea, Flood 2014): a 64-bit state advanced by the golden gamma and
/// finalised by a bijective mixer. Small, fast, and identical on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  /// Next 64 uniformly distributed bits.
  std::uint64_t next_u64();
  /// Uniform double in [0, 1) with 53 random bits.
  double next_unit();
  /// Uniform integer in [0, n), unbiased (rejection); n must be >= 1.
  std::uint64_t next_below(std::uint64_t n);
  /// The finaliser alone: a bijection on 64-bit values, used to derive stream seeds.
  static std::uint64_t mix(std::uint64_t z);

 private:
  std::uint64_t state_;
};

/// One value of dimension `d` drawn from `rng` (uniform over a choice's values; uniform or
/// log-uniform over a range, clamped into [low, high); ints unbiased, onto their step). The
/// one copy of the per-dimension draw: RandomSampler::draw and PBT's resample use it.
nlohmann::json draw_value(const Dimension& d, SplitMix64& rng);

class RandomSampler final : public Sampler {
 public:
  /// Throws std::invalid_argument for a dimension the validator should have rejected
  /// (empty choices, high < low, log scale with a non-positive bound).
  RandomSampler(Space space, std::uint64_t seed);

  /// Fresh params for trial `number` (never exhausted); history is ignored.
  std::optional<Params> next(std::int64_t number, const History& history) override;
  std::optional<std::int64_t> size() const override { return std::nullopt; }
  std::string name() const override { return "random"; }

  /// The value of one dimension for trial `number` (what next() stores under d.name).
  nlohmann::json draw(const Dimension& d, std::int64_t number) const;

 private:
  Space space_;
  std::uint64_t seed_;
};

}  // namespace dlsweep::search
