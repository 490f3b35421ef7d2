#include "trainer/optim/sgd.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace dlsweep::trainer::optim {

namespace {

// Below this many floats in total the update runs on one thread: the fork/join costs more.
constexpr std::int64_t kParallelThreshold = 1 << 15;
// Per-thread slices start on cache-line boundaries (16 floats).
constexpr std::int64_t kLine = 16;

// The update of one contiguous slice. Built for several ISAs (the Debian baseline is SSE2),
// the best one is picked at load time; every clone computes the same IEEE float expression
// element by element (no FMA contraction in ISO C++ mode), so results do not depend on the
// clone or on the thread split.
template <bool kNesterov>
__attribute__((target_clones("avx512f", "avx2", "default"))) void update_slice(
    float* __restrict w, const float* __restrict g, float* __restrict v, std::int64_t n, float lr, float m,
    float wd) {
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * w[i];
    const float vi = m * v[i] + d;
    v[i] = vi;
    if constexpr (kNesterov) w[i] -= lr * (d + m * vi);
    else w[i] -= lr * vi;
  }
}

}  // namespace

Sgd::Sgd(models::ParameterSet& params, double momentum, bool nesterov, double weight_decay, bool decay_biases)
    : params_(params),
      momentum_(static_cast<float>(momentum)),
      weight_decay_(static_cast<float>(weight_decay)),
      nesterov_(nesterov),
      decay_biases_(decay_biases),
      velocity_(params.arena_size()) {
  for (std::size_t i = 0; i < params.tensors().size(); ++i) all_.push_back(i);
}

// One parallel region per call: each thread updates its slice of every listed tensor, so a
// call costs one fork/join and no barrier between tensors.
void Sgd::update(float lr, std::span<const std::size_t> tensors) {
  std::int64_t total = 0;
  for (std::size_t i : tensors) total += params_.tensor(i).span();
  float* const w0 = params_.values();
  const float* const g0 = params_.grads();
  float* const v0 = velocity_.data();
#pragma omp parallel if (total >= kParallelThreshold)
  {
    const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    for (std::size_t i : tensors) {
      const models::ParamTensor& p = params_.tensor(i);
      const std::int64_t n = p.span();
      const std::int64_t chunk = (n + nt * kLine - 1) / (nt * kLine) * kLine;
      const std::int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
      if (begin >= end) continue;
      const float wd = (p.is_bias && !decay_biases_) ? 0.f : weight_decay_;
      const std::int64_t o = p.offset + begin;
      if (nesterov_) update_slice<true>(w0 + o, g0 + o, v0 + o, end - begin, lr, momentum_, wd);
      else update_slice<false>(w0 + o, g0 + o, v0 + o, end - begin, lr, momentum_, wd);
    }
  }
}

void Sgd::step(double lr) { update(static_cast<float>(lr), all_); }

void Sgd::step(double lr, std::span<const std::size_t> tensors) { update(static_cast<float>(lr), tensors); }

}  // namespace dlsweep::trainer::optim
