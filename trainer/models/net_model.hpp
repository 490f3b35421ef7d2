// net_model.hpp — the base of every model: a layer graph (kernels::NetGraph) over the model's
// ParameterSet, compiled by the backend into one Net per (batch size, mode) on first use and
// replayed afterwards (a batch ramp adds one Net per batch size it visits).
//
// A subclass declares its layers (declare_dense/conv/batch_norm), calls finish_parameters()
// (which allocates and initialises the parameters), then records its graph with the
// *_params() views of the declared layers. Initialisation: weights He-normal
// (std = sqrt(2/fan_in)) from the stream (seed, kStreamInit, k) of the k-th weight tensor
// declared, biases 0, batch-norm scale 1 and shift 0, running mean 0 and variance 1.
// Each declared layer owns one backward tag; backward() turns tags back into the indices of
// the layer's tensors for Model's on_ready contract.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/kernels/kernels.hpp"
#include "trainer/kernels/net.hpp"
#include "trainer/models/model.hpp"

namespace dlsweep::trainer::models {

class NetModel : public Model {
 public:
  ParameterSet& parameters() override { return params_; }
  std::int64_t input_size() const override { return input_shape_.size(); }
  std::int64_t classes() const override { return classes_; }

  void prepare(std::int64_t n, Mode mode) override { net(n, mode); }
  kernels::MatrixView input(std::int64_t n, Mode mode) override { return net(n, mode).input(); }
  kernels::MatrixView forward(std::int64_t n, Mode mode) override;
  kernels::MatrixView logits_grad(std::int64_t n) override { return net(n, Mode::train).output_grad(); }
  void backward(std::int64_t n, const GradReadyFn& on_ready = {}) override;

  /// Per-sample input shape [c, h, w].
  kernels::Shape input_shape() const { return input_shape_; }
  kernels::Precision precision() const { return precision_; }
  /// precision bf16 through fp32 kernels on bf16-rounded operands even where the backend has
  /// native bf16 kernels (the trainer's `bf16_kernels: emulated`). Set before the first batch.
  void set_emulate_bf16(bool on) {
    if (!nets_.empty()) throw std::logic_error("NetModel::set_emulate_bf16 after a net was built");
    emulate_bf16_ = on;
  }
  bool emulate_bf16() const { return emulate_bf16_; }
  /// NetOptions::deterministic of every net built from now on. Set before the first batch.
  void set_deterministic(bool on) {
    if (!nets_.empty()) throw std::logic_error("NetModel::set_deterministic after a net was built");
    deterministic_ = on;
  }
  const kernels::NetGraph& graph() const { return graph_; }
  /// The backend's description of each node at batch n (diagnostics).
  std::vector<std::string> describe(std::int64_t n, Mode mode) { return net(n, mode).describe(); }

 protected:
  NetModel(kernels::Kernels& backend, kernels::Shape input, std::int64_t classes, kernels::Precision precision);

  struct DenseDecl {
    std::size_t w = 0, b = 0;
    int tag = -1;
  };
  struct ConvDecl {
    std::size_t w = 0, b = 0;
    bool bias = false;
    int tag = -1;
  };
  struct BatchNormDecl {
    std::size_t scale = 0, shift = 0, mean = 0, var = 0;
    int tag = -1;
  };
  DenseDecl declare_dense(const std::string& name, std::int64_t in, std::int64_t out);
  ConvDecl declare_conv(const std::string& name, std::int64_t in_channels, std::int64_t out_channels,
                        std::int64_t kernel, bool bias);
  BatchNormDecl declare_batch_norm(const std::string& name, std::int64_t channels);
  /// Allocates the parameters and initialises them from `seed`.
  void finish_parameters(std::uint64_t seed);

  kernels::DenseParams dense_params(const DenseDecl& d) const;
  kernels::ConvParams conv_params(const ConvDecl& d) const;
  kernels::BatchNormParams bn_params(const BatchNormDecl& d) const;

  kernels::NetGraph graph_;  ///< recorded by the subclass constructor after finish_parameters()

 private:
  kernels::Net& net(std::int64_t n, Mode mode);
  int new_tag(std::vector<std::size_t> tensors);

  kernels::Kernels& backend_;
  kernels::Shape input_shape_;
  std::int64_t classes_;
  kernels::Precision precision_;
  bool emulate_bf16_ = false;
  bool deterministic_ = true;
  ParameterSet params_;
  std::vector<std::pair<std::size_t, std::int64_t>> weights_;  ///< (tensor, fan_in), declaration order
  std::vector<std::size_t> bn_scales_;                         ///< initialised to 1
  std::vector<std::vector<std::size_t>> tag_tensors_;
  std::map<std::pair<std::int64_t, Mode>, std::unique_ptr<kernels::Net>> nets_;
  // backward(): the tag → tensors adapter is built once; it reads the caller's callback here.
  const GradReadyFn* on_ready_ = nullptr;
  kernels::LayerReadyFn ready_adapter_;
};

}  // namespace dlsweep::trainer::models
