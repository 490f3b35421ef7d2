#include "trainer/optim/adam.hpp"

#include <cmath>

namespace dlsweep::trainer::optim {

namespace {

template <bool kDecoupled>
__attribute__((target_clones("avx512f", "avx2", "default"))) void adam_slice(
    float* __restrict w, const float* __restrict g, float* __restrict m, float* __restrict v, std::int64_t n, float lr,
    float b1, float b2, float c1, float c2, float eps, float wd) {
  const float keep = 1.0f - lr * wd;
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    float wi = w[i], d = g[i];
    if constexpr (kDecoupled) wi = wi * keep;
    else d = d + wd * wi;
    const float mi = b1 * m[i] + (1.0f - b1) * d;
    const float vi = b2 * v[i] + (1.0f - b2) * (d * d);
    m[i] = mi;
    v[i] = vi;
    w[i] = wi - lr * (mi * c1) / (std::sqrt(vi * c2) + eps);
  }
}

}  // namespace

Adam::Adam(models::ParameterSet& params, bool decoupled, double beta1, double beta2, double eps, double weight_decay,
           bool decay_biases)
    : TensorOptimizer(params, weight_decay, decay_biases),
      decoupled_(decoupled),
      beta1_(beta1),
      beta2_(beta2),
      eps_(static_cast<float>(eps)),
      m_(params.arena_size()),
      v_(params.arena_size()) {}

std::vector<std::span<float>> Adam::state_arenas() {
  return {std::span<float>(m_.data(), static_cast<std::size_t>(m_.size())),
          std::span<float>(v_.data(), static_cast<std::size_t>(v_.size()))};
}

void Adam::update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double, std::int64_t count) {
  const std::int64_t o = params_.tensor(i).offset + begin;
  const auto c1 = static_cast<float>(1.0 / (1.0 - std::pow(beta1_, static_cast<double>(count))));
  const auto c2 = static_cast<float>(1.0 / (1.0 - std::pow(beta2_, static_cast<double>(count))));
  auto* f = decoupled_ ? &adam_slice<true> : &adam_slice<false>;
  f(params_.values() + o, params_.grads() + o, m_.data() + o, v_.data() + o, end - begin, static_cast<float>(lr),
    static_cast<float>(beta1_), static_cast<float>(beta2_), c1, c2, eps_, wd(i));
}

}  // namespace dlsweep::trainer::optim
