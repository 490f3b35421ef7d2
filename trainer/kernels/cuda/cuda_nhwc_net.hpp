// cuda_nhwc_net.hpp — kernels::Net on the GPU for the tensor-core precisions (tf32, bf16,
// fp16): activations and their gradients stored channel-last (NHWC) in the precision's
// storage type (fp32 for tf32, bfloat16, half), parameters, their gradients and batch-norm
// statistics fp32 (the master weights; each step casts the weights the layers read).
//   dense        cuBLASLt (lt_gemm.hpp): A/B in the storage type, fp32 accumulation; the weight
//                gradient GEMM writes fp32 straight into the gradient arena; bias and ReLU by
//                mixed_kernels; a dense layer after a spatial tensor reads a row-permuted weight
//                copy (nhwc_layout.hpp) so the NHWC activations need no transpose;
//   conv         cuDNN convolution on NHWC tensors and KRSC filters (tensor-core math), the
//                fastest deterministic algorithm cuDNN's heuristic offers; bias + ReLU and the
//                bias gradient (one deterministic reduction) by mixed_kernels;
//   batch_norm   mixed_kernels: statistics by a deterministic per-channel reduction in double,
//                the ReLU fused into the normalisation and into the gradient's reduction;
//   pool, relu, add, global average: mixed_kernels.
// The interface is the fp32 Net's (net.hpp): input(), output(), output_grad() and input_grad()
// are fp32 [n, features] NCHW matrices; the net converts at its two ends. Each pass runs as a
// CUDA graph from its second call on (cuda_graph.hpp, graph_policy.hpp). fp32 itself runs on
// CudaNet (cuda_net.hpp), whose NCHW kernels are bit-identical to the CPU reference's math.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/kernels/cuda/cuda_graph.hpp"
#include "trainer/kernels/cuda/cuda_net.hpp"
#include "trainer/kernels/cuda/mixed_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

/// The storage type of a precision on this net (fp32 -> f32 as well; tf32 is f32 storage).
DType storage_type(Precision p);

class CudaNhwcNet final : public Net, public DeviceInputNet {
 public:
  /// Throws std::invalid_argument for graphs it cannot run, std::runtime_error for CUDA,
  /// cuBLASLt or cuDNN failures.
  CudaNhwcNet(const CudaHandles& h, const NetGraph& graph, const NetOptions& options, NetInputs* inputs = nullptr);
  ~CudaNhwcNet() override;

  MatrixView input() override { return input_host_; }
  MatrixView output() override { return out32_; }
  MatrixView output_grad() override { return dout32_; }
  MatrixView input_grad() override { return din32_; }
  void forward() override;
  void backward(const LayerReadyFn& on_ready = {}) override;
  std::vector<std::string> describe() const override { return describe_; }
  float* device_input() const override { return in32_.data; }
  void input_on_device() override { input_on_device_ = true; }

  struct Node;

 private:
  void forward_pass();
  void backward_pass(const LayerReadyFn& on_ready);
  void* alloc_bytes(std::size_t bytes);
  float* alloc_floats(std::int64_t n) { return static_cast<float*>(alloc_bytes(static_cast<std::size_t>(n) * 4)); }
  void zero_grad(void* p, std::int64_t count);

  CudaHandles h_;
  NetOptions options_;
  DType t_ = DType::f32;
  std::size_t esize_ = 4;  ///< bytes of one stored element
  NetInputs* inputs_ = nullptr;
  bool input_on_device_ = false;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<void*> act_, grad_;  ///< per node, storage type, NHWC
  std::vector<char> written_;
  MatrixView input_host_;  ///< pinned host fp32 [n, input size], NCHW rows
  MatrixView in32_;        ///< device fp32 copy of it (CudaData gathers here)
  MatrixView out32_, dout32_, din32_;
  void* workspace_ = nullptr;  ///< cuDNN's and cuBLASLt's
  std::size_t workspace_bytes_ = 0;
  double* reduce_scratch_ = nullptr;
  double *sum1_ = nullptr, *sum2_ = nullptr;
  std::vector<void*> owned_;
  std::vector<std::string> describe_;
  CudaGraphRunner fwd_graph_, bwd_graph_;  ///< each pass captured once, replayed after
  /// DLSWEEP_CUDA_PROFILE=1: every pass eager, each node timed with events, a table printed
  /// to stderr when the net is destroyed (benchmarks and diagnosis; off in normal runs).
  struct NodeProfile {
    explicit NodeProfile(std::size_t slots);
    ~NodeProfile();
    void collect(std::vector<cudaEvent_t>& ev, std::vector<double>& ms, double& count);
    std::vector<cudaEvent_t> fwd, bwd;
    std::vector<double> fwd_ms, bwd_ms;
    double fwd_calls = 0, bwd_calls = 0;
    static constexpr int kWarmup = 2;  ///< forward + backward passes not timed
    int seen = 0;
  };
  std::unique_ptr<NodeProfile> prof_;
};

}  // namespace dlsweep::trainer::kernels::cuda
