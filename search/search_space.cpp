// search_space.cpp — the one computation a Space owns: how many values a dimension has.
//
// Invariant (from the validator): int_step >= 1 and int_low <= int_high for int_range, so
// the count below is at least 1 for every finite dimension.
#include "search/search_space.hpp"

namespace dlsweep::search {

std::int64_t Dimension::cardinality() const {
  switch (kind) {
    case Kind::choice:
      return static_cast<std::int64_t>(choices.size());
    case Kind::int_range: {
      if (int_high < int_low) return 0;
      const std::int64_t step = int_step > 0 ? int_step : 1;
      // Values low, low+step, ..., <= high. Computed in unsigned arithmetic so that a range
      // spanning most of int64 does not overflow the subtraction.
      const auto span = static_cast<std::uint64_t>(int_high) - static_cast<std::uint64_t>(int_low);
      return static_cast<std::int64_t>(span / static_cast<std::uint64_t>(step)) + 1;
    }
    case Kind::uniform:
    case Kind::log_uniform:
      return 0;
  }
  return 0;
}

}  // namespace dlsweep::search
