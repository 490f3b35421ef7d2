// stats.hpp — small statistics on plain vectors: mean/std/n and percentiles.
// std is the sample standard deviation (n - 1 in the denominator); 0 when n < 2.
// percentile() interpolates linearly between order statistics (type 7, R's default).
#pragma once

#include <cstddef>
#include <vector>

namespace dlsweep::analysis {

struct Stat {
  double mean = 0;
  double std = 0;
  std::size_t n = 0;
};

Stat summarize(const std::vector<double>& xs);
/// q in [0, 1]; xs need not be sorted; 0 for an empty vector.
double percentile(std::vector<double> xs, double q);
double median(std::vector<double> xs);

}  // namespace dlsweep::analysis
