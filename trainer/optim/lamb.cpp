#include "trainer/optim/lamb.hpp"

#include <cmath>

#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer::optim {

namespace {

inline float lamb_r(float m, float v, float w, float c1, float c2, float eps, float wd) {
  return (m * c1) / (std::sqrt(v * c2) + eps) + wd * w;
}

}  // namespace

Lamb::Lamb(models::ParameterSet& params, double beta1, double beta2, double eps, double weight_decay,
           bool decay_biases)
    : TensorOptimizer(params, weight_decay, decay_biases),
      beta1_(beta1),
      beta2_(beta2),
      eps_(static_cast<float>(eps)),
      m_(params.arena_size()),
      v_(params.arena_size()) {}

std::vector<std::span<float>> Lamb::state_arenas() {
  return {std::span<float>(m_.data(), static_cast<std::size_t>(m_.size())),
          std::span<float>(v_.data(), static_cast<std::size_t>(v_.size()))};
}

void Lamb::update(std::size_t i, std::int64_t, std::int64_t, double lr, double, std::int64_t count) {
  const auto& t = params_.tensor(i);
  float* w = params_.values() + t.offset;
  const float* g = params_.grads() + t.offset;
  float* m = m_.data() + t.offset;
  float* v = v_.data() + t.offset;
  const auto b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_);
  const auto c1 = static_cast<float>(1.0 / (1.0 - std::pow(beta1_, static_cast<double>(count))));
  const auto c2 = static_cast<float>(1.0 / (1.0 - std::pow(beta2_, static_cast<double>(count))));
  const float eps = eps_, wdi = wd(i);
  parallel_slices(t.span(), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t k = lo; k < hi; ++k) {
      m[k] = b1 * m[k] + (1.0f - b1) * g[k];
      v[k] = b2 * v[k] + (1.0f - b2) * (g[k] * g[k]);
    }
  });
  const auto norms = block_reduce<2>(t.span(), [&](std::int64_t lo, std::int64_t hi) {
    double w2 = 0, r2 = 0;
    for (std::int64_t k = lo; k < hi; ++k) {
      const double r = lamb_r(m[k], v[k], w[k], c1, c2, eps, wdi);
      w2 += static_cast<double>(w[k]) * w[k];
      r2 += r * r;
    }
    return std::array<double, 2>{w2, r2};
  });
  const double wn = std::sqrt(norms[0]), rn = std::sqrt(norms[1]);
  const double ratio = (wn == 0.0 || rn == 0.0) ? 1.0 : wn / rn;
  const auto rate = static_cast<float>(lr * ratio);
  parallel_slices(t.span(), [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t k = lo; k < hi; ++k) w[k] -= rate * lamb_r(m[k], v[k], w[k], c1, c2, eps, wdi);
  });
}

}  // namespace dlsweep::trainer::optim
