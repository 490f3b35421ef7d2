// rng.hpp — the trainer's only source of randomness: SplitMix64 streams and the few
// distributions built on them, written out so that a seed gives the same numbers with every
// compiler and standard library (std::shuffle and std::*_distribution are
// implementation-defined). Determinism of whole runs rests on this file.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace dlsweep::trainer {

/// SplitMix64 (Steele, Lea, Flood 2014; the seeding generator of xoshiro). Passes BigCrush,
/// one add and three xor-multiply steps per number.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection).
  std::uint64_t below(std::uint64_t bound) {
    if (bound <= 1) return 0;
    const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
      if (static_cast<std::uint64_t>(m) >= threshold) return static_cast<std::uint64_t>(m >> 64);
    }
  }

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Standard normal by Box-Muller (one of the pair; simple and exactly reproducible).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t state_;
};

/// A well-mixed seed for the stream (seed, purpose, index), e.g. (seed, kShuffle, epoch):
/// distinct streams for distinct tuples, independent of the order they are created in.
inline std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t purpose, std::uint64_t index) {
  SplitMix64 a(seed ^ (purpose * 0xD1B54A32D192ED03ULL));
  SplitMix64 b(a.next() ^ (index * 0x8CB92BA72F3D8DD7ULL));
  return b.next();
}

/// Purposes for stream_seed(): each consumer of randomness has its own.
enum : std::uint64_t { kStreamInit = 1, kStreamShuffle = 2, kStreamSynthetic = 3, kStreamAugment = 4, kStreamBranch = 5 };

/// The seed of the data order: `seed`, or with a branch_seed (a branching study's branch) a
/// stream of its own, so each branch sees the data in another order from its fork on.
inline std::uint64_t data_seed(std::uint64_t seed, std::uint64_t branch_seed) {
  return branch_seed == 0 ? seed : stream_seed(seed, kStreamBranch, branch_seed);
}

}  // namespace dlsweep::trainer
