// make_sampler.cpp — the one place that maps an Algorithm to a Sampler implementation.
// Adding a sampler means adding a case here and its own <name>_sampler.{hpp,cpp}.
#include "search/grid_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

std::unique_ptr<Sampler> make_sampler(Algorithm algo, const Space& space, std::uint64_t seed) {
  switch (algo) {
    case Algorithm::grid:
      return std::make_unique<GridSampler>(space);
    case Algorithm::random:
      return std::make_unique<RandomSampler>(space, seed);
  }
  return nullptr;
}

}  // namespace dlsweep::search
