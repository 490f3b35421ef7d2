// bench_stats.hpp — the statistics the search benchmarks print (one copy for
// bench_search_quality and bench_multi_objective_quality).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace bench {

/// The q-quantile of v (linear interpolation between order statistics, numpy's default).
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

}  // namespace bench
