// grid_sampler.cpp — mixed-radix decoding of a trial number into one grid point.
//
// Invariant: radix_[d] >= 1 for every d, so decoding never divides by zero; total_ is the
// exact product unless it would overflow, in which case it saturates (such a grid is never
// exhausted in practice, and numbers below INT64_MAX still decode to distinct points).
#include "search/grid_sampler.hpp"

#include <limits>
#include <stdexcept>

#include "search/conditional.hpp"

namespace dlsweep::search {

namespace {

nlohmann::json value_at(const Dimension& d, std::int64_t index) {
  if (d.kind == Dimension::Kind::choice) return d.choices[static_cast<std::size_t>(index)];
  const std::int64_t step = d.int_step > 0 ? d.int_step : 1;
  return nlohmann::json(static_cast<std::int64_t>(d.int_low + index * step));
}

}  // namespace

GridSampler::GridSampler(Space space) : space_(std::move(space)) {
  radix_.reserve(space_.dims.size());
  for (const auto& d : space_.dims) {
    const std::int64_t card = d.cardinality();
    if (card <= 0) {
      throw std::invalid_argument("grid sampler: dimension '" + d.name +
                                  "' is not a non-empty finite set (choice or int_range); "
                                  "the study validator should have rejected it");
    }
    radix_.push_back(card);
    if (total_ > std::numeric_limits<std::int64_t>::max() / card) {
      total_ = std::numeric_limits<std::int64_t>::max();
    } else if (total_ != std::numeric_limits<std::int64_t>::max()) {
      total_ *= card;
    }
  }
  // A conditional space: keep the combinations whose inactive dimensions sit at their first
  // value (the others repeat one of them).
  if (!has_conditions(space_) || total_ > kMaxIndexed) return;
  for (std::int64_t index = 0; index < total_; ++index) {
    Params p = decode(index);
    Params active = p;
    drop_inactive(space_, active);
    bool canonical = true;
    for (const auto& d : space_.dims)
      if (!active.contains(d.name) && p[d.name] != value_at(d, 0)) canonical = false;
    if (canonical) distinct_.push_back(index);
  }
  total_ = static_cast<std::int64_t>(distinct_.size());
}

Params GridSampler::decode(std::int64_t index) const {
  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  std::int64_t rest = index;
  for (std::size_t i = space_.dims.size(); i-- > 0;) {
    const std::int64_t digit = rest % radix_[i];
    rest /= radix_[i];
    p[space_.dims[i].name] = value_at(space_.dims[i], digit);
  }
  return p;
}

std::optional<Params> GridSampler::next(std::int64_t number, const History&) {
  if (number < 0 || number >= total_) return std::nullopt;
  Params p = decode(distinct_.empty() ? number : distinct_[static_cast<std::size_t>(number)]);
  drop_inactive(space_, p);
  return p;
}

}  // namespace dlsweep::search
