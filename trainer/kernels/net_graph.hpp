// net_graph.hpp — a model's layers as a backend-neutral graph: what each layer computes and
// which parameter buffers it reads and writes. A backend compiles a graph into a Net (net.hpp)
// for one batch size and mode, choosing memory layouts and fusions itself; the graph knows
// nothing about layouts or batch sizes.
//
// Invariants:
//  - nodes are in topological order: a node's inputs are earlier nodes (the builder methods
//    only accept ids they returned), so forward runs nodes in order and backward in reverse;
//  - shapes are per sample [c, h, w]; a dense layer's input is flattened in NCHW order
//    (c-major, then h, then w), the order of a row of the trainer's row-major matrices;
//  - parameter buffers use the trainer's layouts (ParameterSet): dense weights [in, out]
//    (y = x·W), convolution weights [out, in·k·k] rows in OIHW order, per-channel vectors
//    (biases, batch-norm scale/shift/running statistics) contiguous [c];
//  - a `tag` (>= 0) names the parameter group of a layer: Net::backward reports it when the
//    layer's parameter gradients are final. Layers without parameters have tag -1.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trainer/kernels/kernels.hpp"
#include "trainer/kernels/precision.hpp"

namespace dlsweep::trainer::kernels {

/// Per-sample activation shape [c, h, w]; a vector of features is [features, 1, 1].
struct Shape {
  std::int64_t c = 0, h = 1, w = 1;
  std::int64_t size() const { return c * h * w; }
  bool operator==(const Shape&) const = default;
};


/// 2-D convolution (cross-correlation), square kernel, same stride and padding on both axes.
struct ConvSpec {
  std::int64_t out_channels = 0;
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t pad = 0;
  Activation act = Activation::none;  ///< fused after the bias
};

/// Pooling: max over a window (padding never wins), or the mean over the whole plane (global).
struct PoolSpec {
  enum class Kind { max, global_avg };
  Kind kind = Kind::max;
  std::int64_t kernel = 2;  ///< max only
  std::int64_t stride = 2;  ///< max only
  std::int64_t pad = 0;     ///< max only
};

/// Batch normalisation over (batch, h, w) per channel. Training mode normalises with the batch
/// statistics (biased variance) and updates the running statistics as PyTorch does:
/// running = (1 - momentum)·running + momentum·batch, with the unbiased variance
/// (m/(m-1), m = batch·h·w); evaluation mode normalises with the running statistics.
struct BatchNormSpec {
  double eps = 1e-5;
  double momentum = 0.1;
  bool relu = false;  ///< ReLU fused after the affine transform
};

/// Parameter buffers of a dense layer (see DenseBinding for the shapes). Gradients may be
/// null/empty in graphs only compiled for evaluation.
struct DenseParams {
  MatrixView w, dw;
  float* b = nullptr;
  float* db = nullptr;
};

/// Parameter buffers of a convolution: w/dw [out, in·k·k]; b/db [out] or null (no bias).
struct ConvParams {
  MatrixView w, dw;
  float* b = nullptr;
  float* db = nullptr;
};

/// Parameter and state buffers of a batch normalisation, each [c].
struct BatchNormParams {
  float* scale = nullptr;
  float* shift = nullptr;
  float* dscale = nullptr;
  float* dshift = nullptr;
  float* running_mean = nullptr;  ///< updated by training-mode forward
  float* running_var = nullptr;
};

using TensorId = int;

struct NetNode {
  enum class Op { input, dense, conv, pool, batch_norm, relu, add };
  Op op = Op::input;
  std::vector<TensorId> inputs;
  Shape shape;  ///< output, per sample
  Activation act = Activation::none;  ///< dense, add
  ConvSpec conv;
  PoolSpec pool;
  BatchNormSpec bn;
  DenseParams dense_params;
  ConvParams conv_params;
  BatchNormParams bn_params;
  int tag = -1;
};

/// Records the layers of a network. Builder methods check shapes and throw
/// std::invalid_argument on a wiring mistake (a programming error in a model).
class NetGraph {
 public:
  /// The network input (exactly one, first). Filled by the caller as rows of NCHW floats.
  TensorId input(Shape s);
  /// y = act(flatten(x)·W + b); `out` features.
  TensorId dense(TensorId x, std::int64_t out, Activation act, const DenseParams& p, int tag);
  TensorId conv(TensorId x, const ConvSpec& spec, const ConvParams& p, int tag);
  TensorId pool(TensorId x, const PoolSpec& spec);
  TensorId batch_norm(TensorId x, const BatchNormSpec& spec, const BatchNormParams& p, int tag);
  TensorId relu(TensorId x);
  /// y = act(a + b); a and b have the same shape.
  TensorId add(TensorId a, TensorId b, Activation act);

  std::span<const NetNode> nodes() const { return nodes_; }
  const NetNode& node(TensorId t) const;
  /// The last node added: the network's output (logits).
  TensorId output() const { return static_cast<TensorId>(nodes_.size()) - 1; }
  /// Number of nodes that read tensor t.
  int consumers(TensorId t) const;

 private:
  TensorId push(NetNode n);
  std::vector<NetNode> nodes_;
};

/// Output size of a convolution or pooling window along one axis.
constexpr std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

/// One-line description of a node ("conv 5x5/1 pad 2 32->64 relu [64,14,14]").
std::string describe_node(const NetGraph& g, TensorId t);

}  // namespace dlsweep::trainer::kernels
