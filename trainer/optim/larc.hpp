// larc.hpp — LARC as NVIDIA apex implements it (apex/parallel/LARC.py; docs/math.md#larc):
// a layer-wise rescaling of the gradient in front of SGD with momentum. Per tensor, with its
// weight decay wd, when ‖w‖ ≠ 0 and ‖g‖ ≠ 0:
//     a = tc·‖w‖ / (‖g‖ + wd·‖w‖ + eps)
//     clip mode:  a = min(a/lr, 1)         (effective rate min(lr, tc·‖w‖/(...)))
//     scale mode: a as is                  (effective rate lr·a)
//     g' = (g + wd·w)·a
// then the wrapped SGD steps with weight decay 0 (sgd.hpp: PyTorch form, or Goyal's
// uncorrected form without momentum_correction; Nesterov as SGD). apex's quirk is kept: when
// a norm is 0 the tensor's gradient is used as is, weight decay skipped. Defaults (apex):
// tc = larc_trust_coefficient 0.02, larc_mode clip, eps = larc_eps 1e-8. Unlike LARS, apex
// applies LARC to every parameter, biases included.
#pragma once

#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::optim {

class Larc final : public TensorOptimizer {
 public:
  Larc(models::ParameterSet& params, const OptimizerSpec& spec);
  std::string_view name() const override { return "larc"; }
  std::vector<std::span<float>> state_arenas() override;
  /// The factor a applied to tensor i's (g + wd·w) at learning rate lr, and the weight decay
  /// used with it (0 under the zero-norm quirk). For diagnostics and tests.
  std::pair<double, float> scale(std::size_t i, double lr) const;

 private:
  void update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double prev_lr,
              std::int64_t count) override;
  bool sliced() const override { return false; }
  float momentum_;
  double trust_, eps_;
  bool nesterov_, correction_, clip_;
  kernels::AlignedBuffer velocity_;
};

}  // namespace dlsweep::trainer::optim
