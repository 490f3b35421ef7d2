// onednn_kernels.hpp — the CPU backend on oneDNN (2.6). Written in the style of oneDNN's
// examples/cnn_training_f32.cpp: every primitive descriptor is created once when a kernel is
// built, memory objects wrap the model's buffers directly (no copies, no reorders: the
// trainer's padded row-major layout is what the matmul primitives consume), and the
// argument lists are flat dnnl_exec_arg_t arrays replayed through the C API, so a step
// allocates nothing on our side. Scratchpads are user-managed and owned by each kernel.
//
// Dense layer = matmul (bias and ReLU fused as bias argument and eltwise post-op) forward;
// eltwise_backward(relu, use dst) in place on dy, a ones·dz matmul (GEMV) for db, matmul
// with a transposed source for dw and a transposed weight for dx.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels {

class OnednnKernels final : public Kernels {
 public:
  /// One CPU engine and one in-order stream shared by every kernel built here.
  OnednnKernels();
  std::string_view name() const override { return "onednn"; }
  std::unique_ptr<DenseKernel> make_dense(Activation act, const DenseBinding& binding) override;
  /// Compiles a graph in onednn_net.cpp.
  std::unique_ptr<Net> make_net(const NetGraph& graph, const NetOptions& options) override;
  LossStats softmax_cross_entropy(MatrixView logits, const std::int32_t* labels, float grad_scale,
                                  MatrixView dlogits) override;
  void set_profiling(bool on) override;
  KernelProfile profile() const override { return profile_; }

  /// Runs one primitive with a prebuilt argument array (used by this backend's kernels).
  void execute(const dnnl::primitive& p, const std::vector<dnnl_exec_arg_t>& args);
  const dnnl::engine& engine() const { return engine_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  bool profiling_ = false;
  KernelProfile profile_;
};

}  // namespace dlsweep::trainer::kernels
