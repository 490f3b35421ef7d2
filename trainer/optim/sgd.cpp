#include "trainer/optim/sgd.hpp"

#include <cstdint>

namespace dlsweep::trainer::optim {

namespace {

// Built for several ISAs (the Debian baseline is SSE2), the best one is picked at load time;
// every clone computes the same IEEE float expression element by element (no FMA contraction:
// -ffp-contract=off, top-level CMakeLists.txt), so results do not depend on the clone or on
// the thread split.
template <bool kNesterov, bool kCorrected>
__attribute__((target_clones("avx512f", "avx2", "default"))) void slice(
    float* __restrict w, const float* __restrict g, float* __restrict v, std::int64_t n, float lr, float m, float wd,
    float gs) {
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = gs * (g[i] + wd * w[i]);
    if constexpr (kCorrected) {
      const float vi = m * v[i] + d;
      v[i] = vi;
      if constexpr (kNesterov) w[i] -= lr * (d + m * vi);
      else w[i] -= lr * vi;
    } else {
      const float ui = m * v[i] + lr * d;
      v[i] = ui;
      if constexpr (kNesterov) w[i] -= m * ui + lr * d;
      else w[i] -= ui;
    }
  }
}

}  // namespace

void momentum_slice(float* w, const float* g, float* v, std::int64_t n, float lr, float m, float wd, float g_scale,
                    bool nesterov, bool corrected) {
  if (corrected) {
    if (nesterov) slice<true, true>(w, g, v, n, lr, m, wd, g_scale);
    else slice<false, true>(w, g, v, n, lr, m, wd, g_scale);
  } else {
    if (nesterov) slice<true, false>(w, g, v, n, lr, m, wd, g_scale);
    else slice<false, false>(w, g, v, n, lr, m, wd, g_scale);
  }
}

Sgd::Sgd(models::ParameterSet& params, double momentum, bool nesterov, double weight_decay, bool decay_biases,
         bool momentum_correction)
    : TensorOptimizer(params, weight_decay, decay_biases),
      momentum_(static_cast<float>(momentum)),
      nesterov_(nesterov),
      correction_(momentum_correction),
      velocity_(params.arena_size()) {}

std::vector<std::span<float>> Sgd::state_arenas() {
  return {std::span<float>(velocity_.data(), static_cast<std::size_t>(velocity_.size()))};
}

void Sgd::update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double, std::int64_t) {
  const std::int64_t o = params_.tensor(i).offset + begin;
  momentum_slice(params_.values() + o, params_.grads() + o, velocity_.data() + o, end - begin, static_cast<float>(lr), momentum_, wd(i),
                 1.0f, nesterov_, correction_);
}

}  // namespace dlsweep::trainer::optim
