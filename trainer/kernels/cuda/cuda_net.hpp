// cuda_net.hpp — kernels::Net on the GPU for graphs of dense layers (the MLP): one
// CublasLtDense per layer (bias and ReLU fused into the forward GEMM's epilogue), activations
// and their gradients in device memory, every launch on the backend's stream.
//
// input() is a page-locked HOST buffer the caller fills (the trainer's host gather); forward()
// copies it to the device first, on the stream, unless CudaData gathered the batch into the
// device input directly (input_on_device()). output(), output_grad() and input_grad() are
// device buffers (the backend's loss reads them there). Graphs with other operations
// (convolution, pooling, batch norm: the CNN and the ResNets) are refused with
// std::invalid_argument until the cuDNN layers exist.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "trainer/kernels/net.hpp"

namespace dlsweep::trainer::kernels::cuda {

class CublasLtDense;
class CudaDenseNet;

/// The backend's nets by their input() pointer, so that CudaData can gather into the device
/// input behind a view the trainer holds.
class NetInputs {
 public:
  void add(const float* host_input, CudaDenseNet* net) { nets_[host_input] = net; }
  void remove(const float* host_input) { nets_.erase(host_input); }
  CudaDenseNet* find(const float* host_input) const {
    auto it = nets_.find(host_input);
    return it == nets_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<const float*, CudaDenseNet*> nets_;
};

class CudaDenseNet final : public Net {
 public:
  /// Throws std::invalid_argument for graphs or options it cannot run, std::runtime_error
  /// for CUDA/cuBLASLt failures.
  CudaDenseNet(cublasLtHandle_t handle, cudaStream_t stream, const NetGraph& graph, const NetOptions& options,
               NetInputs* inputs = nullptr);
  ~CudaDenseNet() override;

  MatrixView input() override { return input_host_; }
  MatrixView output() override { return acts_.back(); }
  MatrixView output_grad() override { return grads_.back(); }
  MatrixView input_grad() override { return input_grad_; }
  void forward() override;
  void backward(const LayerReadyFn& on_ready = {}) override;
  std::vector<std::string> describe() const override;
  /// The device copy of the input (what forward() reads).
  float* device_input() const { return acts_.front().data; }
  /// The next forward() reads the device input as it is (CudaData gathered into it) instead
  /// of copying input() over it.
  void input_on_device() { input_on_device_ = true; }

 private:
  struct Layer {
    const float *w = nullptr, *b = nullptr;
    float *dw = nullptr, *db = nullptr;
    int tag = -1;
    bool relu = false;
    std::unique_ptr<CublasLtDense> gemm;
  };
  float* device_alloc(std::int64_t floats);

  cudaStream_t stream_;
  NetOptions options_;
  NetInputs* inputs_ = nullptr;
  bool input_on_device_ = false;
  std::vector<Layer> layers_;
  MatrixView input_host_;          ///< pinned host [n, in]
  std::vector<MatrixView> acts_;   ///< device: acts_[0] = input, acts_[l+1] = layer l's output
  std::vector<MatrixView> grads_;  ///< device: grads_[l] = dL/d acts_[l+1] (train mode)
  MatrixView input_grad_;          ///< device, only with NetOptions::input_grad
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::vector<void*> owned_;
};

}  // namespace dlsweep::trainer::kernels::cuda
