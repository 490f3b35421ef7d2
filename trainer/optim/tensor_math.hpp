// tensor_math.hpp — the reductions and loops the optimizers share: sums reduced in double
// over fixed blocks of floats, added in block order (so a norm does not depend on the thread
// count), and a parallel loop over one tensor's floats. Padding is zero in every arena, so
// loops run over a tensor's whole span.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace dlsweep::trainer::optim {

/// Below this many floats a loop runs on one thread: the fork/join costs more.
inline constexpr std::int64_t kParallelThreshold = 1 << 15;
/// Per-thread slices start on cache-line boundaries (16 floats).
inline constexpr std::int64_t kLine = 16;
/// Reductions form one partial sum per block of this many floats.
inline constexpr std::int64_t kReduceBlock = 4096;

/// The slice [begin, end) of n floats that thread t of nt handles (cache-line aligned starts).
inline void thread_slice(std::int64_t n, std::int64_t nt, std::int64_t t, std::int64_t& begin, std::int64_t& end) {
  const std::int64_t chunk = (n + nt * kLine - 1) / (nt * kLine) * kLine;
  begin = std::min(n, t * chunk);
  end = std::min(n, begin + chunk);
}

/// Runs f(begin, end) over [0, n) split across the threads (one slice each).
template <class F>
void parallel_slices(std::int64_t n, F&& f) {
#pragma omp parallel if (n >= kParallelThreshold)
  {
    std::int64_t begin = 0, end = 0;
    thread_slice(n, omp_get_num_threads(), omp_get_thread_num(), begin, end);
    if (begin < end) f(begin, end);
  }
}

/// Σ over blocks of f(lo, hi) (an array of K doubles per block), blocks of kReduceBlock
/// floats added in block order whatever the thread count. Allocates only on first use of a
/// larger tensor (a thread-local buffer of partials).
template <int K, class F>
std::array<double, K> block_reduce(std::int64_t n, F&& f) {
  const std::int64_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
  thread_local std::vector<std::array<double, K>> partial;
  if (partial.size() < static_cast<std::size_t>(blocks)) partial.resize(static_cast<std::size_t>(blocks));
  auto* part = partial.data();
#pragma omp parallel for schedule(static) if (n >= kParallelThreshold)
  for (std::int64_t blk = 0; blk < blocks; ++blk) part[blk] = f(blk * kReduceBlock, std::min(n, (blk + 1) * kReduceBlock));
  std::array<double, K> total{};
  for (std::int64_t blk = 0; blk < blocks; ++blk)
    for (int k = 0; k < K; ++k) total[k] += part[blk][k];
  return total;
}

/// Σ a[i]² over [0, n), in double (deterministic as block_reduce).
double sum_squares(const float* a, std::int64_t n);

/// {Σ a[i]², Σ b[i]²} over [0, n) in one pass.
std::array<double, 2> sum_squares2(const float* a, const float* b, std::int64_t n);

}  // namespace dlsweep::trainer::optim
