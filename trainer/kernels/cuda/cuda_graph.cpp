#include "trainer/kernels/cuda/cuda_graph.hpp"

#include <cstdlib>
#include <exception>

#include "trainer/kernels/cuda/cuda_memory.hpp"

namespace dlsweep::trainer::kernels::cuda {

CudaGraphRunner::~CudaGraphRunner() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

const char* CudaGraphRunner::mode() const {
  if (state_.failed) return "eager (capture failed)";
  return state_.captured ? "graph" : "eager";
}

void CudaGraphRunner::run(cudaStream_t stream, bool has_callback, const std::function<void()>& body) {
  const bool enabled = graphs_enabled(std::getenv("DLSWEEP_CUDA_GRAPHS"));  // per pass: benchmarks toggle it
  const GraphAction action = next_graph_action(state_, enabled, has_callback);
  ++state_.calls;
  if (action == GraphAction::replay) {
    check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
    return;
  }
  if (action == GraphAction::eager) {
    body();
    return;
  }
  // Capture: everything `body` enqueues on `stream` becomes the graph.
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    (void)cudaGetLastError();
    state_.failed = true;
    body();
    return;
  }
  bool body_ok = true;
  try {
    body();
  } catch (const std::exception&) {
    body_ok = false;  // a launch refused inside the capture
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  cudaGraphExec_t exec = nullptr;
  const bool ok = body_ok && end == cudaSuccess && graph &&
                  cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  if (graph) cudaGraphDestroy(graph);
  if (!ok) {
    if (exec) cudaGraphExecDestroy(exec);
    (void)cudaGetLastError();
    state_.failed = true;
    body();  // nothing of the abandoned capture ran: run the pass for real
    return;
  }
  exec_ = exec;
  state_.captured = true;
  check(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
}

}  // namespace dlsweep::trainer::kernels::cuda
