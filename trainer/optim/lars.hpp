// lars.hpp — LARS, layer-wise adaptive rate scaling (You, Gitman, Ginsburg 2017; TF contrib
// LARSOptimizer; docs/math.md#lars). Per tensor, with its weight decay wd:
//     local = η·‖w‖ / (‖g‖ + wd·‖w‖ + eps)      (= 1 if ‖w‖ = 0 or ‖g‖ = 0)
//     v = m·v + lr·local·(g + wd·w);   w -= v    or, Nesterov: w -= m·v + lr·local·(g + wd·w)
// η = lars_trust_coefficient (default 0.001), eps = lars_eps (default 0, the paper's form).
// Biases and normalisation parameters are excluded by default (lars_exclude_bias_norm, as TF
// contrib): local = 1 for them, i.e. plain momentum (their wd is 0 unless decay_biases).
// The LR sits inside v, so an LR change needs the momentum correction (Goyal et al.): with
// momentum_correction (default) v is scaled by lr_t/lr_{t−1} before the update whenever the
// previous LR was positive.
#pragma once

#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::optim {

class Lars final : public TensorOptimizer {
 public:
  Lars(models::ParameterSet& params, const OptimizerSpec& spec);
  std::string_view name() const override { return "lars"; }
  std::vector<std::span<float>> state_arenas() override;
  /// The trust ratio `local` of tensor i for the current weights and gradients (diagnostics, tests).
  double local_lr(std::size_t i) const;

 private:
  void update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double prev_lr,
              std::int64_t count) override;
  bool sliced() const override { return false; }
  double momentum_, trust_, eps_;
  bool nesterov_, correction_, exclude_bias_norm_;
  kernels::AlignedBuffer velocity_;
};

}  // namespace dlsweep::trainer::optim
