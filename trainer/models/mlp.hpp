// mlp.hpp — multilayer perceptron inputs → hidden… → classes, ReLU after every hidden layer,
// logits out (the loss applies softmax). Weights are stored [in, out] (y = x·W + b), He-normal
// initialised from the seed (std = sqrt(2/fan_in)), biases zero. Parameters in order
// fc1.weight, fc1.bias, fc2.weight, …; one backward tag per layer.
#pragma once

#include <vector>

#include "trainer/models/net_model.hpp"

namespace dlsweep::trainer::models {

struct MlpSpec {
  std::int64_t inputs = 784;
  std::vector<std::int64_t> hidden = {512, 512};
  std::int64_t classes = 10;
};

class Mlp final : public NetModel {
 public:
  /// Declares and initialises the parameters; kernels are built per batch size on demand.
  Mlp(kernels::Kernels& backend, MlpSpec spec, std::uint64_t seed,
      kernels::Precision precision = kernels::Precision::fp32);

  std::string_view name() const override { return "mlp"; }
  /// Number of dense layers.
  std::size_t layers() const { return spec_.hidden.size() + 1; }

 private:
  std::int64_t width(std::size_t i) const;  ///< width of activation i (0 = inputs)
  MlpSpec spec_;
};

}  // namespace dlsweep::trainer::models
