#include "trainer/kernels/onednn/onednn_kernels.hpp"

#include "trainer/kernels/onednn/onednn_exec.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlsweep::trainer::kernels {

namespace {

using dnnl::memory;
using dt = memory::data_type;

class OnednnDense final : public DenseKernel {
 public:
  OnednnDense(OnednnKernels& k, Activation act, const DenseBinding& b) : k_(k), act_(act) {
    const auto& eng = k.engine();
    const std::int64_t n = b.x.rows, in = b.x.cols, out = b.w.cols;
    if (b.w.rows != in || b.y.rows != n || b.y.cols != out)
      throw std::invalid_argument("OnednnDense: inconsistent shapes in DenseBinding");

    // Forward: y = act(x·w + b) in one matmul.
    {
      dnnl::primitive_attr attr = user_scratchpad_attr();
      if (act == Activation::relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
        attr.set_post_ops(ops);
      }
      auto src = row_major(n, in, b.x.ld), wei = row_major(in, out, b.w.ld),
           bias = row_major(1, out, out), dst = row_major(n, out, b.y.ld);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, bias, dst), attr, eng);
      fwd_.create<dnnl::matmul>(pd, eng);
      fwd_.bind(DNNL_ARG_SRC, src, eng, b.x.data);
      fwd_.bind(DNNL_ARG_WEIGHTS, wei, eng, b.w.data);
      fwd_.bind(DNNL_ARG_BIAS, bias, eng, b.b);
      fwd_.bind(DNNL_ARG_DST, dst, eng, b.y.data);
    }
    if (!b.trainable()) return;
    if (b.dy.rows != n || b.dy.cols != out || b.dw.rows != in || b.dw.cols != out || !b.db)
      throw std::invalid_argument("OnednnDense: inconsistent gradient shapes in DenseBinding");

    // When y and dy share a stride, the elementwise pass and the bias GEMV run over the padded
    // rows as dense [n, ld] tensors (padding is zero and stays zero), which is what oneDNN's
    // vectorised eltwise implementation accepts; otherwise over the strided logical view.
    const bool dense_rows = b.y.ld == b.dy.ld;
    const std::int64_t cols = dense_rows ? b.dy.ld : out;
    auto dz_md = dense_rows ? row_major(n, cols, cols) : row_major(n, out, b.dy.ld);
    auto y_md = dense_rows ? row_major(n, cols, cols) : row_major(n, out, b.y.ld);

    // dz = dy ⊙ relu'(y), in place.
    if (act == Activation::relu) {
      auto alg = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
      dnnl::eltwise_forward::primitive_desc hint(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, y_md, 0.f, 0.f), eng);
      dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(alg, dz_md, y_md, 0.f, 0.f),
                                                user_scratchpad_attr(), eng, hint);
      relu_bwd_.create<dnnl::eltwise_backward>(pd, eng);
      relu_bwd_.bind(DNNL_ARG_DST, y_md, eng, b.y.data);
      relu_bwd_.bind(DNNL_ARG_DIFF_DST, dz_md, eng, b.dy.data);
      relu_bwd_.bind(DNNL_ARG_DIFF_SRC, dz_md, eng, b.dy.data);
      has_relu_bwd_ = true;
    }
    // db = Σ_rows dz as the GEMV ones[1,n]·dz: oneDNN 2.6's reduction primitive has no
    // vectorised implementation for this shape on AVX2 (it picks ref:any, ~10x slower).
    {
      ones_ = AlignedBuffer(n);
      std::fill(ones_.data(), ones_.data() + n, 1.0f);
      auto src = row_major(1, n, n), db_md = row_major(1, cols, cols);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, dz_md, db_md), user_scratchpad_attr(), eng);
      bias_bwd_.create<dnnl::matmul>(pd, eng);
      bias_bwd_.bind(DNNL_ARG_SRC, src, eng, ones_.data());
      bias_bwd_.bind(DNNL_ARG_WEIGHTS, dz_md, eng, b.dy.data);
      bias_bwd_.bind(DNNL_ARG_DST, db_md, eng, b.db);
    }
    // dw = xᵀ·dz.
    {
      auto src = transposed(in, n, b.x.ld), wei = row_major(n, out, b.dy.ld), dst = row_major(in, out, b.dw.ld);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), user_scratchpad_attr(), eng);
      w_bwd_.create<dnnl::matmul>(pd, eng);
      w_bwd_.bind(DNNL_ARG_SRC, src, eng, b.x.data);
      w_bwd_.bind(DNNL_ARG_WEIGHTS, wei, eng, b.dy.data);
      w_bwd_.bind(DNNL_ARG_DST, dst, eng, b.dw.data);
    }
    // dx = dz·wᵀ.
    if (!b.dx.empty()) {
      if (b.dx.rows != n || b.dx.cols != in)
        throw std::invalid_argument("OnednnDense: inconsistent dx shape in DenseBinding");
      auto src = row_major(n, out, b.dy.ld), wei = transposed(out, in, b.w.ld), dst = row_major(n, in, b.dx.ld);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), user_scratchpad_attr(), eng);
      x_bwd_.create<dnnl::matmul>(pd, eng);
      x_bwd_.bind(DNNL_ARG_SRC, src, eng, b.dy.data);
      x_bwd_.bind(DNNL_ARG_WEIGHTS, wei, eng, b.w.data);
      x_bwd_.bind(DNNL_ARG_DST, dst, eng, b.dx.data);
      has_x_bwd_ = true;
    }
    trainable_ = true;
  }

  void forward() override { k_.execute(fwd_.prim, fwd_.args); }

  void backward() override {
    if (!trainable_) throw std::logic_error("OnednnDense::backward on a forward-only kernel");
    if (has_relu_bwd_) k_.execute(relu_bwd_.prim, relu_bwd_.args);
    k_.execute(bias_bwd_.prim, bias_bwd_.args);
    k_.execute(w_bwd_.prim, w_bwd_.args);
    if (has_x_bwd_) k_.execute(x_bwd_.prim, x_bwd_.args);
  }

  std::string describe() const override {
    std::string s = "fwd=" + fwd_.impl;
    if (has_relu_bwd_) s += " relu_bwd=" + relu_bwd_.impl;
    if (trainable_) s += " db=" + bias_bwd_.impl + " dw=" + w_bwd_.impl;
    if (has_x_bwd_) s += " dx=" + x_bwd_.impl;
    return s;
  }

 private:
  OnednnKernels& k_;
  Activation act_;
  OnednnExec fwd_, relu_bwd_, bias_bwd_, w_bwd_, x_bwd_;
  AlignedBuffer ones_;  ///< [1, n] of 1.0f for the bias-gradient GEMV
  bool trainable_ = false, has_relu_bwd_ = false, has_x_bwd_ = false;
};

}  // namespace

OnednnKernels::OnednnKernels() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

std::unique_ptr<DenseKernel> OnednnKernels::make_dense(Activation act, const DenseBinding& binding) {
  return std::make_unique<OnednnDense>(*this, act, binding);
}

void OnednnKernels::execute(const dnnl::primitive& p, const std::vector<dnnl_exec_arg_t>& args) {
  using clock = std::chrono::steady_clock;
  clock::time_point t0;
  if (profiling_) t0 = clock::now();
  dnnl_status_t st = dnnl_primitive_execute(p.get(), stream_.get(), static_cast<int>(args.size()), args.data());
  if (st != dnnl_success) throw dnnl::error(st, "could not execute a oneDNN primitive");
  if (profiling_) {
    stream_.wait();
    profile_.seconds += std::chrono::duration<double>(clock::now() - t0).count();
    ++profile_.calls;
  }
}

void OnednnKernels::set_profiling(bool on) {
  profiling_ = on;
  profile_ = {};
}

// Hand-written: B×classes is tiny next to the GEMMs, and one fused pass (max, exp once per
// element, normalise into dlogits) beats three primitives. Same formula as ref::, in float
// except for the double accumulation of the loss.
LossStats OnednnKernels::softmax_cross_entropy(MatrixView logits, const std::int32_t* labels,
                                               float grad_scale, MatrixView dlogits) {
  LossStats st;
  const std::int64_t k = logits.cols;
  for (std::int64_t r = 0; r < logits.rows; ++r) {
    const float* l = logits.row(r);
    float mx = -std::numeric_limits<float>::infinity();
    std::int64_t arg = 0;
    for (std::int64_t c = 0; c < k; ++c)
      if (l[c] > mx) {
        mx = l[c];
        arg = c;
      }
    const std::int32_t label = labels[r];
    if (arg == label) ++st.correct;
    float z = 0;
    if (dlogits.empty()) {
      for (std::int64_t c = 0; c < k; ++c) z += std::exp(l[c] - mx);
    } else {
      float* d = dlogits.row(r);
      for (std::int64_t c = 0; c < k; ++c) z += (d[c] = std::exp(l[c] - mx));
      const float s = grad_scale / z;
      for (std::int64_t c = 0; c < k; ++c) d[c] *= s;
      d[label] -= grad_scale;
    }
    st.loss_sum += static_cast<double>(mx) + std::log(static_cast<double>(z)) - static_cast<double>(l[label]);
  }
  return st;
}

}  // namespace dlsweep::trainer::kernels
