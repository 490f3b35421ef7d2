// reference_kernels.hpp — the plain-loop backend: reference_math.hpp in float. Slow by
// design (no blocking, double accumulation); it exists so every other backend can be tested
// against it, and so the trainer runs anywhere.
#pragma once

#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels {

class ReferenceKernels final : public Kernels {
 public:
  std::string_view name() const override { return "reference"; }
  std::unique_ptr<DenseKernel> make_dense(Activation act, const DenseBinding& binding) override;
  std::unique_ptr<Net> make_net(const NetGraph& graph, const NetOptions& options) override;
  LossStats softmax_cross_entropy(MatrixView logits, const std::int32_t* labels, float grad_scale,
                                  MatrixView dlogits) override;
};

}  // namespace dlsweep::trainer::kernels
