// lamb.hpp — LAMB (You et al. 2019, arXiv:1904.00962; docs/math.md#lamb). Per tensor,
// update number t from 1, with its weight decay wd:
//     m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  m̂ = m/(1−β1^t),  v̂ = v/(1−β2^t)
//     r = m̂/(√v̂ + eps) + wd·w
//     w -= lr · (‖w‖/‖r‖) · r          (ratio 1 when either norm is 0)
// Defaults β1 0.9, β2 0.999, eps = lamb_eps 1e-6. Applied to every tensor (biases get wd = 0
// unless decay_biases). Three passes per tensor: moments; norms of w and r; the update (r is
// recomputed with the same float expression, so it is the r whose norm was taken).
#pragma once

#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::optim {

class Lamb final : public TensorOptimizer {
 public:
  Lamb(models::ParameterSet& params, double beta1, double beta2, double eps, double weight_decay, bool decay_biases);
  std::string_view name() const override { return "lamb"; }
  std::vector<std::span<float>> state_arenas() override;

 private:
  void update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double prev_lr,
              std::int64_t count) override;
  bool sliced() const override { return false; }
  double beta1_, beta2_;
  float eps_;
  kernels::AlignedBuffer m_, v_;
};

}  // namespace dlsweep::trainer::optim
