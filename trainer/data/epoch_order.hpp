// epoch_order.hpp — the order in which an epoch visits the training samples: a Fisher-Yates
// shuffle driven by the SplitMix64 stream (seed, epoch). Written out (not std::shuffle) so that
// the order is the same on every platform; depends only on (n, seed, epoch), so a resumed run
// recomputes the order of any epoch without replaying earlier ones.
#pragma once

#include <cstdint>
#include <span>

namespace dlsweep::trainer::data {

/// Fills `order` with a permutation of 0..order.size()-1 for (seed, epoch).
void epoch_order(std::uint64_t seed, std::int64_t epoch, std::span<std::uint32_t> order);

}  // namespace dlsweep::trainer::data
