#include "trainer/data/epoch_order.hpp"

#include <numeric>
#include <utility>

#include "trainer/rng.hpp"

namespace dlsweep::trainer::data {

void epoch_order(std::uint64_t seed, std::int64_t epoch, std::span<std::uint32_t> order) {
  std::iota(order.begin(), order.end(), 0u);
  SplitMix64 rng(stream_seed(seed, kStreamShuffle, static_cast<std::uint64_t>(epoch)));
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = rng.below(i);  // uniform in [0, i-1]
    std::swap(order[i - 1], order[j]);
  }
}

}  // namespace dlsweep::trainer::data
