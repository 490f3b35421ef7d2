// qmc_sampler.cpp — Sobol point `number`, mapped dimension by dimension.
#include "search/qmc_sampler.hpp"

#include "search/conditional.hpp"
#include "search/value_map.hpp"

namespace dlsweep::search {

QmcSampler::QmcSampler(Space space, std::uint64_t seed, bool scramble)
    : space_(std::move(space)), sobol_(space_.dims.size(), seed, scramble) {}

std::optional<Params> QmcSampler::next(std::int64_t number, const History&) {
  if (number < 0) return std::nullopt;
  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  for (std::size_t i = 0; i < space_.dims.size(); ++i)
    p[space_.dims[i].name] = value_from_unit(space_.dims[i], sobol_.coordinate(static_cast<std::uint64_t>(number), i));
  drop_inactive(space_, p);
  return p;
}

bool qmc_fits(const Space& space) { return space.dims.size() <= Sobol::kMaxDims; }

std::optional<bool> read_startup(OptionReader& r) {
  if (!r.has("startup")) return std::nullopt;
  return r.word("startup", "qmc", {"qmc", "random"}) == "qmc";
}

}  // namespace dlsweep::search
