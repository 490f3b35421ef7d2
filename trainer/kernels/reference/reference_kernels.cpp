#include "trainer/kernels/reference/reference_kernels.hpp"

#include <stdexcept>

#include "trainer/kernels/reference/reference_math.hpp"

namespace dlsweep::trainer::kernels {

namespace {

class ReferenceDense final : public DenseKernel {
 public:
  ReferenceDense(Activation act, const DenseBinding& b) : act_(act), b_(b) {}

  void forward() override {
    ref::dense_forward<float>(ref::mat(b_.x), ref::mat(b_.w), b_.b, act_, ref::mat(b_.y));
  }

  void backward() override {
    if (!b_.trainable()) throw std::logic_error("ReferenceDense::backward on a forward-only kernel");
    ref::dense_backward<float>(ref::mat(b_.x), ref::mat(b_.w), ref::mat(b_.y), act_, ref::mat(b_.dy),
                               ref::mat(b_.dw), b_.db, ref::mat(b_.dx));
  }

 private:
  Activation act_;
  DenseBinding b_;
};

}  // namespace

std::unique_ptr<DenseKernel> ReferenceKernels::make_dense(Activation act, const DenseBinding& binding) {
  return std::make_unique<ReferenceDense>(act, binding);
}

LossStats ReferenceKernels::softmax_cross_entropy(MatrixView logits, const std::int32_t* labels,
                                                  float grad_scale, MatrixView dlogits) {
  return ref::softmax_cross_entropy<float>(ref::mat(logits), labels, grad_scale, ref::mat(dlogits));
}

}  // namespace dlsweep::trainer::kernels
