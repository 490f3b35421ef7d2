// onednn_dense_bf16.cpp — the native bf16 dense layer (design in onednn_dense_bf16.hpp):
// a conversion (fp32 master → bf16 copy) and one matmul forward; eltwise ReLU backward, a
// ones·dz GEMV for db, matmuls for dw (fp32 out) and dx (bf16 out) backward.
#include "trainer/kernels/onednn/onednn_dense_bf16.hpp"

#include "trainer/kernels/bf16.hpp"
#include "trainer/kernels/onednn/onednn_exec.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlsweep::trainer::kernels {

namespace {

using dnnl::memory;
using dt = memory::data_type;

/// A zeroed buffer holding `elems` bf16 values.
AlignedBuffer bf16_buffer(std::int64_t elems) { return AlignedBuffer((elems + 1) / 2); }

class OnednnDenseBf16 final : public DenseKernel {
 public:
  OnednnDenseBf16(OnednnKernels& k, Activation act, const DenseBf16Binding& b) : k_(k) {
    const auto& eng = k.engine();
    const std::int64_t n = b.n, in = b.in, out = b.out;
    if (b.w.rows != in || b.w.cols != out) throw std::invalid_argument("OnednnDenseBf16: inconsistent shapes");
    const dt ydt = b.y_f32 ? dt::f32 : dt::bf16;

    // The bf16 copy of the weights, same stride as the master (padding converts to zeros).
    // to_bf16 rather than a reorder: oneDNN 2.6's reorder takes milliseconds on a [512, 10].
    w_ = b.w;
    w16_ = bf16_buffer(in * b.w.ld);
    const auto w16_md = row_major(in, out, b.w.ld, dt::bf16);
    // y = act(x·w + b).
    {
      dnnl::primitive_attr attr = user_scratchpad_attr();
      if (act == Activation::relu) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
        attr.set_post_ops(ops);
      }
      auto src = row_major(n, in, b.x.ld, dt::bf16), bias = row_major(1, out, out, dt::f32), dst = row_major(n, out, b.y.ld, ydt);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w16_md, bias, dst), attr, eng);
      fwd_.create<dnnl::matmul>(pd, eng);
      fwd_.bind(DNNL_ARG_SRC, src, eng, b.x.data);
      fwd_.bind(DNNL_ARG_WEIGHTS, w16_md, eng, w16_.data());
      fwd_.bind(DNNL_ARG_BIAS, bias, eng, b.b);
      fwd_.bind(DNNL_ARG_DST, dst, eng, b.y.data);
    }
    if (!b.dy.data) return;
    if (b.dw.rows != in || b.dw.cols != out || !b.db)
      throw std::invalid_argument("OnednnDenseBf16: inconsistent gradient shapes");

    // As in OnednnDense: when y and dy share a stride the elementwise pass and the bias GEMV
    // run over whole padded rows (padding zero and kept zero).
    const bool dense_rows = b.y.ld == b.dy.ld;
    const std::int64_t c = dense_rows ? b.dy.ld : out;
    auto y_md = dense_rows ? row_major(n, c, c, ydt) : row_major(n, out, b.y.ld, ydt);
    auto dy_md = dense_rows ? row_major(n, c, c, ydt) : row_major(n, out, b.dy.ld, ydt);
    if (act == Activation::relu) {  // dz = dy ⊙ relu'(y), in place, in dy's type
      auto alg = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
      dnnl::eltwise_forward::primitive_desc hint(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, y_md, 0.f, 0.f), eng);
      dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(alg, dy_md, y_md, 0.f, 0.f),
                                                user_scratchpad_attr(), eng, hint);
      relu_bwd_.create<dnnl::eltwise_backward>(pd, eng);
      relu_bwd_.bind(DNNL_ARG_DST, y_md, eng, b.y.data);
      relu_bwd_.bind(DNNL_ARG_DIFF_DST, dy_md, eng, b.dy.data);
      relu_bwd_.bind(DNNL_ARG_DIFF_SRC, dy_md, eng, b.dy.data);
      has_relu_bwd_ = true;
    }
    // dz in bf16: dy itself, or a rounded copy of an fp32 dy (output layer).
    void* dz = b.dy.data;
    const std::int64_t dz_ld = b.dy.ld;
    auto dz_md = row_major(n, c, dense_rows ? c : dz_ld, dt::bf16);
    if (b.y_f32) {  // padding columns are zero in dy and stay zero in dz
      dz16_ = bf16_buffer(n * dz_ld);
      dz = dz16_.data();
      dy32_ = static_cast<const float*>(b.dy.data);
      dz_span_ = n * dz_ld;
    }
    // db = ones[1, n] · dz.
    {
      ones_ = bf16_buffer(n);
      std::fill_n(reinterpret_cast<std::uint16_t*>(ones_.data()), n, std::uint16_t{0x3F80});  // 1.0 in bf16
      auto src = row_major(1, n, n, dt::bf16), db_md = row_major(1, c, c, dt::f32);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, dz_md, db_md), user_scratchpad_attr(), eng);
      bias_bwd_.create<dnnl::matmul>(pd, eng);
      bias_bwd_.bind(DNNL_ARG_SRC, src, eng, ones_.data());
      bias_bwd_.bind(DNNL_ARG_WEIGHTS, dz_md, eng, dz);
      bias_bwd_.bind(DNNL_ARG_DST, db_md, eng, b.db);
    }
    // dw = xᵀ · dz, fp32.
    {
      auto src = transposed(in, n, b.x.ld, dt::bf16), wei = row_major(n, out, dz_ld, dt::bf16), dst = row_major(in, out, b.dw.ld, dt::f32);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), user_scratchpad_attr(), eng);
      w_bwd_.create<dnnl::matmul>(pd, eng);
      w_bwd_.bind(DNNL_ARG_SRC, src, eng, b.x.data);
      w_bwd_.bind(DNNL_ARG_WEIGHTS, wei, eng, dz);
      w_bwd_.bind(DNNL_ARG_DST, dst, eng, b.dw.data);
    }
    // dx = dz · w16ᵀ, bf16.
    if (b.dx.data) {
      auto src = row_major(n, out, dz_ld, dt::bf16), wei = transposed(out, in, b.w.ld, dt::bf16), dst = row_major(n, in, b.dx.ld, dt::bf16);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), user_scratchpad_attr(), eng);
      x_bwd_.create<dnnl::matmul>(pd, eng);
      x_bwd_.bind(DNNL_ARG_SRC, src, eng, dz);
      x_bwd_.bind(DNNL_ARG_WEIGHTS, wei, eng, w16_.data());
      x_bwd_.bind(DNNL_ARG_DST, dst, eng, b.dx.data);
      has_x_bwd_ = true;
    }
    trainable_ = true;
  }

  void forward() override {
    to_bf16(w_.data, bf16_bits(w16_), w_.span());
    k_.execute(fwd_.prim, fwd_.args);
  }

  void backward() override {
    if (!trainable_) throw std::logic_error("OnednnDenseBf16::backward on a forward-only kernel");
    if (has_relu_bwd_) k_.execute(relu_bwd_.prim, relu_bwd_.args);
    if (dy32_) to_bf16(dy32_, bf16_bits(dz16_), dz_span_);
    k_.execute(bias_bwd_.prim, bias_bwd_.args);
    k_.execute(w_bwd_.prim, w_bwd_.args);
    if (has_x_bwd_) k_.execute(x_bwd_.prim, x_bwd_.args);
  }

  std::string describe() const override {
    std::string s = "bf16 w_cvt=to_bf16 fwd=" + fwd_.impl;
    if (has_relu_bwd_) s += " relu_bwd=" + relu_bwd_.impl;
    if (dy32_) s += " dz_cvt=to_bf16";
    if (trainable_) s += " db=" + bias_bwd_.impl + " dw=" + w_bwd_.impl;
    if (has_x_bwd_) s += " dx=" + x_bwd_.impl;
    return s;
  }

 private:
  static std::uint16_t* bf16_bits(AlignedBuffer& b) { return reinterpret_cast<std::uint16_t*>(b.data()); }

  OnednnKernels& k_;
  OnednnExec fwd_, relu_bwd_, bias_bwd_, w_bwd_, x_bwd_;
  MatrixView w_;                    ///< fp32 master weights
  AlignedBuffer w16_, dz16_, ones_;  ///< bf16: weight copy, dz of an fp32 dy, [1, n] ones
  const float* dy32_ = nullptr;     ///< the fp32 dy of an output layer (converted into dz16_)
  std::int64_t dz_span_ = 0;
  bool trainable_ = false, has_relu_bwd_ = false, has_x_bwd_ = false;
};

}  // namespace

std::unique_ptr<DenseKernel> make_dense_bf16(OnednnKernels& k, Activation act, const DenseBf16Binding& b) {
  return std::make_unique<OnednnDenseBf16>(k, act, b);
}

}  // namespace dlsweep::trainer::kernels
