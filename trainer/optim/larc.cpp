#include "trainer/optim/larc.hpp"

#include <algorithm>
#include <cmath>

#include "trainer/optim/sgd.hpp"
#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer::optim {

Larc::Larc(models::ParameterSet& params, const OptimizerSpec& spec)
    : TensorOptimizer(params, spec.weight_decay, spec.decay_biases),
      momentum_(static_cast<float>(spec.momentum)),
      trust_(spec.larc_trust),
      eps_(spec.larc_eps),
      nesterov_(spec.nesterov),
      correction_(spec.momentum_correction),
      clip_(spec.larc_clip),
      velocity_(params.arena_size()) {}

std::vector<std::span<float>> Larc::state_arenas() {
  return {std::span<float>(velocity_.data(), static_cast<std::size_t>(velocity_.size()))};
}

std::pair<double, float> Larc::scale(std::size_t i, double lr) const {
  const auto& t = params_.tensor(i);
  const auto [w2, g2] = sum_squares2(params_.values() + t.offset, params_.grads() + t.offset, t.span());
  const double wn = std::sqrt(w2), gn = std::sqrt(g2);
  if (wn == 0.0 || gn == 0.0) return {1.0, 0.0f};  // apex: gradient as is, no weight decay
  const float wdi = wd(i);
  double a = trust_ * wn / (gn + static_cast<double>(wdi) * wn + eps_);
  if (clip_) a = std::min(a / lr, 1.0);  // lr = 0 gives +inf, clipped to 1
  return {a, wdi};
}

void Larc::update(std::size_t i, std::int64_t, std::int64_t, double lr, double, std::int64_t) {
  const auto& t = params_.tensor(i);
  const auto [a, wdi] = scale(i, lr);
  float* w = params_.values() + t.offset;
  const float* g = params_.grads() + t.offset;
  float* v = velocity_.data() + t.offset;
  const float fa = static_cast<float>(a), flr = static_cast<float>(lr), m = momentum_;
  const bool nesterov = nesterov_, corrected = correction_;
  parallel_slices(t.span(), [&, wdi = wdi](std::int64_t b, std::int64_t e) {
    momentum_slice(w + b, g + b, v + b, e - b, flr, m, wdi, fa, nesterov, corrected);
  });
}

}  // namespace dlsweep::trainer::optim
