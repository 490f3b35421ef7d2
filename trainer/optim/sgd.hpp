// sgd.hpp — SGD with momentum in the PyTorch form (REFERENCES.md "SGD with momentum"):
//     d = g + wd·w            (wd = 0 on biases unless decay_biases)
//     v = m·v + d             (v starts at 0, so the first v is d)
//     w -= lr·v               or, Nesterov:  w -= lr·(d + m·v)
// Because the learning rate multiplies v only when it is applied, a changing LR (warmup)
// needs no momentum correction: this form is the corrected one (Goyal et al. 2017, §2.1).
// One fused pass per tensor reads w, g, v and writes w, v.
#pragma once

#include <vector>

#include "trainer/kernels/matrix.hpp"
#include "trainer/optim/optimizer.hpp"

namespace dlsweep::trainer::optim {

class Sgd final : public Optimizer {
 public:
  Sgd(models::ParameterSet& params, double momentum, bool nesterov, double weight_decay, bool decay_biases);
  std::string_view name() const override { return "sgd"; }
  void step(double lr) override;
  void step(double lr, std::span<const std::size_t> tensors) override;
  /// The velocity arena (laid out like the parameters), for tests and checkpoints.
  const float* velocity() const { return velocity_.data(); }

 private:
  models::ParameterSet& params_;
  float momentum_, weight_decay_;
  bool nesterov_, decay_biases_;
  void update(float lr, std::span<const std::size_t> tensors);
  kernels::AlignedBuffer velocity_;
  std::vector<std::size_t> all_;  ///< 0..tensors-1
};

}  // namespace dlsweep::trainer::optim
