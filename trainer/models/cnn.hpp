// cnn.hpp — the small CNN of the Fashion-MNIST benchmarks (Shallue et al.'s "simple CNN",
// TensorFlow's Deep MNIST layout), for any [c, h, w] input (28x28x1 and 32x32x3 in practice):
//   conv 5x5 32 (pad 2) + ReLU → max pool 2x2/2 → conv 5x5 64 (pad 2) + ReLU → max pool 2x2/2
//   → fc 1024 + ReLU → fc classes (logits).
// Parameters conv1.weight [32, c·25], conv1.bias, conv2.weight [64, 800], conv2.bias,
// fc1.weight [64·(h/4)·(w/4), 1024], fc1.bias, fc2.weight, fc2.bias; He-normal weights.
#pragma once

#include "trainer/models/net_model.hpp"

namespace dlsweep::trainer::models {

class Cnn final : public NetModel {
 public:
  /// Throws std::invalid_argument when the input is smaller than 4x4 (two 2x2 poolings).
  Cnn(kernels::Kernels& backend, kernels::Shape input, std::int64_t classes, std::uint64_t seed,
      kernels::Precision precision = kernels::Precision::fp32);
  std::string_view name() const override { return "cnn"; }
};

}  // namespace dlsweep::trainer::models
