#include "trainer/optim/lars.hpp"

#include <cmath>

#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer::optim {

namespace {

template <bool kNesterov>
__attribute__((target_clones("avx512f", "avx2", "default"))) void lars_slice(
    float* __restrict w, const float* __restrict g, float* __restrict v, std::int64_t n, float rate, float m_eff,
    float m, float wd) {
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    const float step = rate * (g[i] + wd * w[i]);
    const float vi = m_eff * v[i] + step;
    v[i] = vi;
    if constexpr (kNesterov) w[i] -= m * vi + step;
    else w[i] -= vi;
  }
}

}  // namespace

Lars::Lars(models::ParameterSet& params, const OptimizerSpec& spec)
    : TensorOptimizer(params, spec.weight_decay, spec.decay_biases),
      momentum_(spec.momentum),
      trust_(spec.lars_trust),
      eps_(spec.lars_eps),
      nesterov_(spec.nesterov),
      correction_(spec.momentum_correction),
      exclude_bias_norm_(spec.lars_exclude_bias_norm),
      velocity_(params.arena_size()) {}

std::vector<std::span<float>> Lars::state_arenas() {
  return {std::span<float>(velocity_.data(), static_cast<std::size_t>(velocity_.size()))};
}

double Lars::local_lr(std::size_t i) const {
  const auto& t = params_.tensor(i);
  if (exclude_bias_norm_ && t.is_bias) return 1.0;
  const auto [w2, g2] = sum_squares2(params_.values() + t.offset, params_.grads() + t.offset, t.span());
  const double wn = std::sqrt(w2), gn = std::sqrt(g2);
  if (wn == 0.0 || gn == 0.0) return 1.0;
  return trust_ * wn / (gn + static_cast<double>(wd(i)) * wn + eps_);
}

void Lars::update(std::size_t i, std::int64_t, std::int64_t, double lr, double prev_lr, std::int64_t) {
  const auto& t = params_.tensor(i);
  const double local = local_lr(i);
  const double m_eff = correction_ && prev_lr > 0 ? momentum_ * (lr / prev_lr) : momentum_;
  const float rate = static_cast<float>(lr * local);
  float* w = params_.values() + t.offset;
  const float* g = params_.grads() + t.offset;
  float* v = velocity_.data() + t.offset;
  const float wdi = wd(i), mf = static_cast<float>(m_eff), m = static_cast<float>(momentum_);
  const bool nesterov = nesterov_;
  parallel_slices(t.span(), [&](std::int64_t b, std::int64_t e) {
    if (nesterov) lars_slice<true>(w + b, g + b, v + b, e - b, rate, mf, m, wdi);
    else lars_slice<false>(w + b, g + b, v + b, e - b, rate, mf, m, wdi);
  });
}

}  // namespace dlsweep::trainer::optim
