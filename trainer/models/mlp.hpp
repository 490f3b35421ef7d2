// mlp.hpp — multilayer perceptron inputs → hidden… → classes, ReLU after every hidden layer,
// logits out (the loss applies softmax). Weights are stored [in, out] (y = x·W + b), He-normal
// initialised from the seed (std = sqrt(2/fan_in)), biases zero.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "trainer/kernels/kernels.hpp"
#include "trainer/models/model.hpp"

namespace dlsweep::trainer::models {

struct MlpSpec {
  std::int64_t inputs = 784;
  std::vector<std::int64_t> hidden = {512, 512};
  std::int64_t classes = 10;
};

class Mlp final : public Model {
 public:
  /// Declares and initialises the parameters; kernels are built per batch size on demand.
  Mlp(kernels::Kernels& backend, MlpSpec spec, std::uint64_t seed);

  std::string_view name() const override { return "mlp"; }
  ParameterSet& parameters() override { return params_; }
  std::int64_t input_size() const override { return spec_.inputs; }
  std::int64_t classes() const override { return spec_.classes; }

  void prepare(std::int64_t n, Mode mode) override { plan(n, mode); }
  kernels::MatrixView input(std::int64_t n, Mode mode) override;
  kernels::MatrixView forward(std::int64_t n, Mode mode) override;
  kernels::MatrixView logits_grad(std::int64_t n) override;
  void backward(std::int64_t n, const GradReadyFn& on_ready = {}) override;

  /// Number of dense layers.
  std::size_t layers() const { return spec_.hidden.size() + 1; }
  /// The backend's description of each layer's kernels at batch n (diagnostics).
  std::vector<std::string> describe(std::int64_t n, Mode mode);

 private:
  struct Plan {
    std::vector<kernels::AlignedBuffer> acts;   ///< acts[0] input, acts[l+1] output of layer l
    std::vector<kernels::AlignedBuffer> grads;  ///< grads[l+1] dL/d(acts[l+1]); grads[0] unused
    std::vector<std::unique_ptr<kernels::DenseKernel>> layers;
    std::int64_t n = 0;
  };
  Plan& plan(std::int64_t n, Mode mode);
  std::int64_t width(std::size_t i) const;  ///< width of activation i (0 = inputs)

  kernels::Kernels& backend_;
  MlpSpec spec_;
  ParameterSet params_;
  std::vector<std::array<std::size_t, 2>> layer_params_;  ///< (weight, bias) indices
  std::map<std::pair<std::int64_t, Mode>, Plan> plans_;
};

}  // namespace dlsweep::trainer::models
