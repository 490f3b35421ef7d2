// adam.hpp — Adam (Kingma & Ba 2014) and AdamW (Loshchilov & Hutter 2017), PyTorch forms
// (docs/math.md#adam-and-adamw). Per tensor, update number t from 1:
//     Adam:   d = g + wd·w                       (L2 in the gradient)
//     AdamW:  w = w·(1 − lr·wd);  d = g          (decoupled decay, applied first)
//     m = β1·m + (1−β1)·d;  v = β2·v + (1−β2)·d²
//     w -= lr · m̂ / (√v̂ + eps),   m̂ = m/(1−β1^t),  v̂ = v/(1−β2^t)
// wd = 0 on biases/norm parameters unless decay_biases. Defaults β1 0.9, β2 0.999, eps 1e-8.
#pragma once

#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::optim {

class Adam final : public TensorOptimizer {
 public:
  /// decoupled = true is AdamW.
  Adam(models::ParameterSet& params, bool decoupled, double beta1, double beta2, double eps, double weight_decay,
       bool decay_biases);
  std::string_view name() const override { return decoupled_ ? "adamw" : "adam"; }
  std::vector<std::span<float>> state_arenas() override;

 private:
  void update(std::size_t i, std::int64_t begin, std::int64_t end, double lr, double prev_lr,
              std::int64_t count) override;
  bool decoupled_;
  double beta1_, beta2_;
  float eps_;
  kernels::AlignedBuffer m_, v_;
};

}  // namespace dlsweep::trainer::optim
