// grid_sampler.hpp — every combination of the finite dimensions, in a stable order.
//
// Order: like nested loops in study-file order, the LAST dimension varies fastest. Trial
// number n is the n-th combination by mixed-radix decoding, so next() is O(dims) and does
// not depend on history: resume proposes exactly the same params for the same number.
// Conditional dimensions (`when:`): a combination whose inactive dimension is not at its
// first value is the same trial as the one where it is, so it is skipped: trial n is the n-th
// distinct combination (found once, in the constructor, for grids of up to kMaxIndexed
// points; larger ones are never run to the end and keep the plain decoding).
// Invariant: every dimension is finite (choice or int_range); the constructor throws
// std::invalid_argument otherwise, because the study validator must have rejected it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/sampler.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

class GridSampler final : public Sampler {
 public:
  /// Throws std::invalid_argument if a dimension is continuous or empty (a validator bug).
  explicit GridSampler(Space space);

  /// Combination `number` merged over the fixed params; nullopt once number >= size().
  std::optional<Params> next(std::int64_t number, const History& history) override;
  /// Product of the cardinalities (1 for a space without dimensions), saturated at INT64_MAX.
  std::optional<std::int64_t> size() const override { return total_; }
  std::string name() const override { return "grid"; }

 private:
  static constexpr std::int64_t kMaxIndexed = 1 << 16;  // indexing costs a few µs per point, once
  /// The raw combination `index` (mixed radix), inactive dimensions not dropped.
  Params decode(std::int64_t index) const;

  Space space_;
  std::vector<std::int64_t> radix_;  ///< cardinality of each dimension, file order
  std::int64_t total_ = 1;
  std::vector<std::int64_t> distinct_;  ///< raw index of each distinct combination (conditional spaces)
};

}  // namespace dlsweep::search
