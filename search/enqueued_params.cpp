// enqueued_params.cpp — fixed values over sampled ones, with conditional dimensions kept
// consistent (see enqueued_params.hpp).
#include "search/enqueued_params.hpp"

#include "search/conditional.hpp"
#include "search/random_sampler.hpp"

namespace dlsweep::search {

Params merge_enqueued(const Space& space, std::uint64_t seed, std::int64_t number, const std::optional<Params>& sampled,
                      const Params& fixed) {
  Params p = sampled && sampled->is_object() ? *sampled : (space.fixed.is_object() ? space.fixed : Params::object());
  if (fixed.is_object())
    for (const auto& [name, value] : fixed.items()) p[name] = value;
  const RandomSampler fallback(space, seed);
  for (std::size_t i : sampling_order(space)) {
    const Dimension& d = space.dims[i];
    if (fixed.is_object() && fixed.contains(d.name)) continue;
    if (!is_active(d, p)) p.erase(d.name);
    else if (!p.contains(d.name)) p[d.name] = fallback.draw(d, number);
  }
  return p;
}

}  // namespace dlsweep::search
