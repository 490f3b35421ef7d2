// cuda_graph.hpp — runs one pass of a GPU net (forward, or backward without a callback) as a
// CUDA graph captured once and replayed (the policy: graph_policy.hpp).
#pragma once

#include <functional>

#include <cuda_runtime_api.h>

#include "trainer/kernels/cuda/graph_policy.hpp"

namespace dlsweep::trainer::kernels::cuda {

class CudaGraphRunner {
 public:
  CudaGraphRunner() = default;
  ~CudaGraphRunner();
  CudaGraphRunner(const CudaGraphRunner&) = delete;
  CudaGraphRunner& operator=(const CudaGraphRunner&) = delete;

  /// Runs `body` (which enqueues the pass on `stream`) eagerly, by capturing it, or replays
  /// the captured graph. A capture that fails (a call cuDNN or the driver refuses inside a
  /// capture) is abandoned, `body` runs eagerly, and this runner stays eager.
  void run(cudaStream_t stream, bool has_callback, const std::function<void()>& body);
  /// "graph" once replaying, "eager" before, "eager (capture failed: ...)" after a failure.
  const char* mode() const;

 private:
  GraphState state_;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace dlsweep::trainer::kernels::cuda
