// cuda_net.hpp — kernels::Net on the GPU: every node of a NetGraph on the backend's stream.
//   dense        cuBLASLt (CublasLtDense: bias and ReLU fused into the forward GEMM's epilogue);
//   conv         cuDNN convolution (forward, backward data, backward filter, backward bias),
//                deterministic algorithms only, bias and ReLU by layer_kernels;
//   pool         max: cuDNN (deterministic); global average: layer_kernels;
//   batch_norm   cuDNN spatial batch norm (training: batch statistics, running statistics
//                updated with the unbiased variance as the graph's contract says; evaluation:
//                the running statistics), ReLU after it by layer_kernels;
//   relu, add    layer_kernels.
// Activations are packed NCHW rows ([n, c·h·w], ld = c·h·w); a tensor read by several nodes
// (a ResNet block's input) gets the sum of their gradients (the first writer overwrites, the
// others add). fp32 uses cuDNN's FMA math (no tensor cores) and cuBLASLt fp32; tf32 allows
// tensor cores in both.
//
// input() is a page-locked HOST buffer the caller fills (the trainer's host gather); forward()
// copies it to the device first, on the stream, unless CudaData gathered the batch into the
// device input directly (input_on_device()). output(), output_grad() and input_grad() are
// device buffers. Options it cannot run (bf16) are refused with std::invalid_argument.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "trainer/kernels/cuda/cuda_graph.hpp"
#include "trainer/kernels/net.hpp"

namespace dlsweep::trainer::kernels::cuda {

class CublasLtDense;

/// What CudaData needs of a GPU net (CudaNet, CudaNhwcNet): the fp32 device buffer of the
/// [n, input size] batch (row stride input().ld) it gathers into, and the note that it did.
class DeviceInputNet {
 public:
  virtual ~DeviceInputNet() = default;
  virtual float* device_input() const = 0;
  /// The next forward() reads the device input as it is instead of copying input() over it.
  virtual void input_on_device() = 0;
};

/// The backend's nets by their input() pointer, so that CudaData can gather into the device
/// input behind a view the trainer holds.
class NetInputs {
 public:
  void add(const float* host_input, DeviceInputNet* net) { nets_[host_input] = net; }
  void remove(const float* host_input) { nets_.erase(host_input); }
  DeviceInputNet* find(const float* host_input) const {
    auto it = nets_.find(host_input);
    return it == nets_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<const float*, DeviceInputNet*> nets_;
};

/// The handles a net runs with (owned by the backend).
struct CudaHandles {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
};

class CudaNet final : public Net, public DeviceInputNet {
 public:
  /// Throws std::invalid_argument for options it cannot run, std::runtime_error for CUDA,
  /// cuBLASLt or cuDNN failures.
  CudaNet(const CudaHandles& h, const NetGraph& graph, const NetOptions& options, NetInputs* inputs = nullptr);
  ~CudaNet() override;

  MatrixView input() override { return input_host_; }
  MatrixView output() override { return act_.back(); }
  MatrixView output_grad() override { return grad_.back(); }
  MatrixView input_grad() override { return grad_.front(); }
  void forward() override;
  void backward(const LayerReadyFn& on_ready = {}) override;
  std::vector<std::string> describe() const override { return describe_; }
  /// The device copy of the input (what forward() reads).
  float* device_input() const override { return act_.front().data; }
  /// The next forward() reads the device input as it is (CudaData gathered into it) instead
  /// of copying input() over it.
  void input_on_device() override { input_on_device_ = true; }

  struct Node;  // per-node descriptors, algorithms and scratch (cuda_net.cpp)

 private:
  float* device_alloc(std::int64_t floats);
  void forward_pass();
  void backward_pass(const LayerReadyFn& on_ready);

  CudaHandles h_;
  NetOptions options_;
  const NetGraph* graph_ = nullptr;
  NetInputs* inputs_ = nullptr;
  bool input_on_device_ = false;
  std::vector<std::unique_ptr<Node>> nodes_;
  MatrixView input_host_;        ///< pinned host [n, input size]
  std::vector<MatrixView> act_;  ///< device, per node
  std::vector<MatrixView> grad_; ///< device, per node (train mode; empty views where not needed)
  std::vector<char> written_;    ///< backward: has grad_[t] been written this pass
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::vector<void*> owned_;
  std::vector<std::string> describe_;
  CudaGraphRunner fwd_graph_, bwd_graph_;  ///< each pass captured once, replayed after (cuda_graph.hpp)
};

}  // namespace dlsweep::trainer::kernels::cuda
