// random_sampler.cpp — SplitMix64 streams and the mapping from 64-bit draws to values.
//
// Stream of (seed, number, dim): state = mix(mix(mix(seed) ^ number) ^ fnv1a64(dim.name)) (common/hash.hpp).
// mix is a bijection, so distinct trial numbers under one seed start distinct streams.
// Continuous values are clamped into [low, high): rounding in low + u*(high-low) or in
// exp(log(...)) could otherwise land exactly on high.
#include "search/random_sampler.hpp"

#include "common/hash.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "search/conditional.hpp"

namespace dlsweep::search {

std::uint64_t SplitMix64::mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t SplitMix64::next_u64() {
  state_ += 0x9e3779b97f4a7c15ULL;
  return mix(state_);
}

double SplitMix64::next_unit() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint64_t SplitMix64::next_below(std::uint64_t n) {
  // Reject the lowest (2^64 mod n) values so every residue is equally likely.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    const std::uint64_t x = next_u64();
    if (x >= threshold) return x % n;
  }
}

namespace {

double clamp_half_open(double v, double low, double high) {
  if (!(v >= low)) return low;  // also catches NaN
  if (v >= high) return std::nextafter(high, low);
  return v;
}

std::int64_t draw_int(const Dimension& d, SplitMix64& rng) {
  const std::int64_t step = d.int_step > 0 ? d.int_step : 1;
  const auto n = static_cast<std::uint64_t>(d.cardinality());  // >= 1, checked at construction
  if (!d.log) {
    return d.int_low + static_cast<std::int64_t>(rng.next_below(n)) * step;
  }
  // Log-uniform over the values: draw x log-uniformly over [low - step/2, last + step/2)
  // and round to the nearest value, so each value gets the log-width of its own cell (as
  // Optuna does for step 1). When low - step/2 would not be positive the first cell starts
  // at low itself.
  const double last = static_cast<double>(d.int_low) + static_cast<double>(n - 1) * static_cast<double>(step);
  double a = static_cast<double>(d.int_low) - 0.5 * static_cast<double>(step);
  if (a <= 0) a = static_cast<double>(d.int_low);
  const double b = last + 0.5 * static_cast<double>(step);
  const double la = std::log(a), lb = std::log(b);
  const double x = std::exp(la + rng.next_unit() * (lb - la));
  const double k = std::floor((x - static_cast<double>(d.int_low)) / static_cast<double>(step) + 0.5);
  const auto idx = static_cast<std::int64_t>(std::clamp(k, 0.0, static_cast<double>(n - 1)));
  return d.int_low + idx * step;
}

}  // namespace

RandomSampler::RandomSampler(Space space, std::uint64_t seed) : space_(std::move(space)), seed_(seed) {
  for (const auto& d : space_.dims) {
    const std::string where = "random sampler: dimension '" + d.name + "': ";
    switch (d.kind) {
      case Dimension::Kind::choice:
        if (d.choices.empty()) throw std::invalid_argument(where + "no choices");
        break;
      case Dimension::Kind::uniform:
        if (!(d.low < d.high)) throw std::invalid_argument(where + "needs low < high");
        break;
      case Dimension::Kind::log_uniform:
        if (!(d.low > 0 && d.low < d.high)) throw std::invalid_argument(where + "needs 0 < low < high");
        break;
      case Dimension::Kind::int_range:
        if (d.cardinality() <= 0) throw std::invalid_argument(where + "needs low <= high");
        if (d.log && d.int_low <= 0) throw std::invalid_argument(where + "log scale needs low >= 1");
        break;
    }
  }
}

nlohmann::json draw_value(const Dimension& d, SplitMix64& rng) {
  switch (d.kind) {
    case Dimension::Kind::choice:
      return d.choices[static_cast<std::size_t>(rng.next_below(d.choices.size()))];
    case Dimension::Kind::uniform:
      return clamp_half_open(d.low + rng.next_unit() * (d.high - d.low), d.low, d.high);
    case Dimension::Kind::log_uniform: {
      const double ll = std::log(d.low), lh = std::log(d.high);
      return clamp_half_open(std::exp(ll + rng.next_unit() * (lh - ll)), d.low, d.high);
    }
    case Dimension::Kind::int_range:
      return nlohmann::json(draw_int(d, rng));
  }
  return nullptr;
}

nlohmann::json RandomSampler::draw(const Dimension& d, std::int64_t number) const {
  const std::uint64_t trial_key = SplitMix64::mix(SplitMix64::mix(seed_) ^ static_cast<std::uint64_t>(number));
  SplitMix64 rng(SplitMix64::mix(trial_key ^ fnv1a64(d.name)));
  return draw_value(d, rng);
}

std::optional<Params> RandomSampler::next(std::int64_t number, const History&) {
  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  for (const auto& d : space_.dims) p[d.name] = draw(d, number);
  drop_inactive(space_, p);
  return p;
}

}  // namespace dlsweep::search
