// onednn_net.hpp — INTERNAL to the oneDNN backend (included by onednn_net.cpp,
// onednn_net_layers.cpp and onednn_net_bf16.cpp only): OnednnNet, what OnednnKernels::make_net returns — a NetGraph
// compiled into two lists of oneDNN primitives with bound arguments (forward, backward),
// built once and replayed every step, in the structure of oneDNN's
// examples/cnn_training_f32.cpp:
//  - convolutions are created with format_tag::any for source, weights and destination; the
//    layout they choose is what flows to the next layer, and a reorder is inserted only where
//    a consumer wants a different one (the user weights [out, in·k·k] are reordered into the
//    chosen layout each forward, the weight gradient back after backward);
//  - pooling, batch norm, ReLU and add work in the layout of their input (fp32 2x2/2 max
//    pooling on nChw8c/nChw16c by max_pool_blocked.hpp, 3x faster than oneDNN 2.6's); dense layers
//    (OnednnDense matmuls) read row-major NCHW rows, so a blocked input is flattened by one
//    reorder (and its gradient reordered back);
//  - every backward primitive descriptor gets its forward one as the hint;
//  - fusions: ReLU after conv/dense/add as a post-op, after batch norm as fuse_norm_relu.
// Gradients: the backward list is compiled in reverse node order, so when a node is reached
// every contribution to its output gradient is known: a tensor with one reader gets its
// gradient written in place (or shares the contribution's buffer, e.g. an add's output
// gradient), a tensor with several readers gets their contributions summed by binary adds
// just before its producer runs; layouts are converted by reorders only where they differ.
// All primitives share one user scratchpad (they run one after another). Evaluation nets
// recycle activation buffers whose last reader has run.
// Precision::bf16 runs natively where oneDNN has bf16 kernels for the CPU (AVX512-BF16, AMX:
// onednn_has_native_bf16(), unless NetOptions::emulate_bf16): every activation and activation
// gradient is a bf16 tensor, convolutions and matmuls (onednn_dense_bf16.hpp) read bf16
// operands, accumulate in fp32 and write parameter gradients in fp32; the weights are
// converted from the fp32 masters into bf16 copies every forward; pooling (oneDNN's),
// batch norm, ReLU, adds and reorders run on bf16 tensors. The caller's buffers stay fp32: input() and
// input_grad() are converted by reorders, a dense output layer writes fp32 logits and reads
// fp32 dL/dlogits. Elsewhere (AVX2, AVX-512 without BF16) bf16 is emulated: each produced
// activation/gradient and each weight copy is rounded in place by round_to_bf16.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/kernels/net.hpp"
#include "trainer/kernels/onednn/onednn_dense_bf16.hpp"
#include "trainer/kernels/onednn/onednn_kernels.hpp"

namespace dlsweep::trainer::kernels::onednn_net {

using dnnl::memory;
using Op = NetNode::Op;
using dt = memory::data_type;
using tag = memory::format_tag;

/// One primitive with its bound arguments.
struct Prim {
  dnnl::primitive prim;
  std::vector<memory> keep;  ///< owners of the handles in args
  std::vector<dnnl_exec_arg_t> args;
  std::string impl;
  memory::desc scratch_md;

  void arg(int a, const memory& m) {
    keep.push_back(m);
    args.push_back({a, m.get()});
  }
  template <class P, class PD>
  void create(const PD& pd) {
    prim = P(pd);
    impl = pd.impl_info_str();
    scratch_md = pd.scratchpad_desc();
  }
};

struct Step {
  Prim* prim = nullptr;       ///< run this primitive, or
  std::function<void()> fn;   ///< call this, or
  int ready_tag = -1;         ///< report this layer's gradients as final
};

struct Tensor {
  Shape shape;
  memory::desc md;
  memory mem;
  bool matrix = false;  ///< row-major NCHW rows with stride ld (what dense layers read)
  std::int64_t ld = 0;
  memory dmem;  ///< gradient, same desc; null until planned
  /// Backward compile: the single reader writes dmem directly (or the caller does: output).
  bool direct = false;
  /// Backward compile: contributions waiting to be summed into dmem (see gather_diff).
  struct Part {
    memory mem;
    bool exclusive;  ///< a buffer nobody else reads (may become dmem itself)
  };
  std::vector<Part> pending;
};

/// Per-node state the backward compile needs from the forward one.
struct NodeState {
  std::optional<dnnl::convolution_forward::primitive_desc> conv_pd;
  memory conv_src, conv_wei;  ///< what the forward convolution read
  memory::desc user_w_md;
  std::optional<dnnl::pooling_forward::primitive_desc> pool_pd;
  std::int64_t custom_pool = 0;      ///< channel block (8, 16) of the 2x2/2 max pooling by max_pool_blocked.hpp; 0: oneDNN's
  std::uint8_t* pool_ws = nullptr;   ///< its workspace (argmax positions)
  dnnl::algorithm pool_alg = dnnl::algorithm::pooling_max;
  memory::dims pool_stride, pool_kernel, pool_pad_l, pool_pad_r;
  std::optional<dnnl::batch_normalization_forward::primitive_desc> bn_pd;
  std::optional<dnnl::eltwise_forward::primitive_desc> relu_pd;
  memory workspace, mean, var;
  std::unique_ptr<DenseKernel> dense;
  MatrixView dense_x, dense_w;  ///< what the dense layer reads (flattened input, weights copy)
  Rows dense_x16;               ///< native bf16: the (flattened) bf16 input rows
  memory flat;                  ///< dense: the flattened input when x is not a matrix
};

inline dnnl::primitive_attr scratch_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

inline dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr a = scratch_attr();
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    a.set_post_ops(ops);
  }
  return a;
}

/// [n, c, h, w] stored as rows of c·h·w values (fp32 unless told) with row stride ld.
inline memory::desc rows_md(std::int64_t n, Shape s, std::int64_t ld, dt type = dt::f32) {
  return memory::desc({n, s.c, s.h, s.w}, type, memory::dims{ld, s.h * s.w, s.w, 1});
}

inline memory::dims dims4(std::int64_t n, Shape s) { return {n, s.c, s.h, s.w}; }

class OnednnNet final : public Net {
 public:
  OnednnNet(OnednnKernels& k, const NetGraph& g, const NetOptions& o);

  MatrixView input() override { return native_ ? in32_ : matrix_view(t_[0].mem, t_[0]); }
  MatrixView output() override { return out_; }
  MatrixView output_grad() override {
    if (!o_.train) throw std::logic_error("OnednnNet::output_grad on an evaluation net");
    return out_grad_;
  }
  MatrixView input_grad() override {
    if (!wants_grad_[0]) throw std::logic_error("OnednnNet::input_grad without NetOptions::input_grad");
    return native_ ? in_grad32_ : matrix_view(t_[0].dmem, t_[0]);
  }
  /// True when this net runs Precision::bf16 on oneDNN's native bf16 kernels.
  bool native_bf16() const { return native_; }

  void forward() override { run(fwd_, {}); }
  void backward(const LayerReadyFn& on_ready) override {
    if (!o_.train) throw std::logic_error("OnednnNet::backward on an evaluation net");
    run(bwd_, on_ready);
  }

  std::vector<std::string> describe() const override;

 private:
  // ---- plumbing (onednn_net.cpp) ---------------------------------------------------------
  void run(const std::vector<Step>& steps, const LayerReadyFn& on_ready);

  memory alloc(const memory::desc& md);

  Prim* new_prim(TensorId node, const char* what);

  /// A reorder src → dst appended to `list` (a layout change, or a copy).
  void add_reorder(std::vector<Step>& list, TensorId node, const char* what, const memory& src, const memory& dst);

  static std::int64_t floats(const memory& m) {
    return static_cast<std::int64_t>(m.get_desc().get_size() / sizeof(float));
  }

  void round_tensor(const Tensor& t) { round_to_bf16(static_cast<float*>(t.mem.get_data_handle()), floats(t.mem)); }

  MatrixView matrix_view(const memory& m, const Tensor& t) const;

  /// Which nodes run backward and which tensors need a gradient (as in reference_net.cpp).
  void plan_gradients();

  /// A tensor stored as rows: padded stride when only dense layers read it (GEMM-friendly,
  /// matrix.hpp), dense otherwise (what pooling/batch norm/convolution accept).
  void make_matrix_tensor(TensorId id);

  void set_output(TensorId id, const memory::desc& md);

  /// The memory of node id's output. Evaluation nets recycle the buffers of tensors whose
  /// last reader has run (forward order is execution order), so a deep net needs a few
  /// activation buffers instead of one per layer; training nets keep every activation for
  /// backward. The input (filled by the caller) and the output are never recycled.
  memory activation(TensorId id, const memory::desc& md);
  void release_dead_inputs(TensorId id);

  void ensure_diff(Tensor& t);

  /// The producer of t rewrites its own output gradient in place (ReLU backward).
  bool modifies_diff_in_place(TensorId id) const;

  struct Target {
    memory mem;
    bool then_contribute = false;  ///< mem is a temporary: call contribute(x, mem) after the writer
  };
  /// Where a backward primitive should write its contribution to dL/dx in layout md: dx itself
  /// when it is the only contribution and the layouts match, else a buffer of its own.
  Target write_target(TensorId x, const memory::desc& md);
  /// Records a contribution to dL/dx held in src (summed when x's producer is compiled).
  void contribute(TensorId x, const memory& src, bool exclusive = true);
  /// Makes dL/dx complete before x's producer reads it — every reader of x runs earlier in
  /// backward. One contribution in x's layout becomes dx itself (no copy) unless it is shared
  /// and x's producer rewrites its gradient in place; otherwise the contributions are brought
  /// to x's layout and summed with binary adds (one pass for the usual two).
  void gather_diff(TensorId x);

  // ---- forward (onednn_net_layers.cpp; compile_output in onednn_net.cpp) ---------------
  void compile_forward(TensorId id);

  void compile_dense_forward(TensorId id);

  void make_dense(TensorId id, MatrixView dx, bool trainable);

  // ---- native bf16 (onednn_net_bf16.cpp) -------------------------------------------------
  /// The element type of node id's output: fp32, or in native bf16 bf16 except a dense
  /// output layer's (fp32 logits for the loss).
  dt tensor_dt(TensorId id) const;
  /// The caller's fp32 input rows, converted into the bf16 input tensor first thing forward.
  void compile_input_to_bf16();
  /// dL/dinput converted to fp32 rows last thing backward (input_grad()).
  void compile_input_grad_to_f32();
  /// The dense layer's bf16 input rows (a flattened copy of a blocked input) and its forward step.
  void compile_dense_forward_bf16(TensorId id);
  /// The dense kernel of onednn_dense_bf16.hpp (dx.data null: no input gradient).
  void make_dense_bf16(TensorId id, Rows dx, bool trainable);

  void compile_conv_forward(TensorId id, dnnl::prop_kind prop);

  void compile_pool_forward(TensorId id, dnnl::prop_kind prop);

  dnnl::normalization_flags bn_flags(const NetNode& nd) const;

  void compile_bn_forward(TensorId id, dnnl::prop_kind prop);

  void compile_output();

  // ---- backward (onednn_net_layers.cpp) ------------------------------------------------
  void compile_backward(TensorId id);

  /// dy ⊙= [y > 0] in place (ReLU fused into the forward primitive).
  void relu_backward_in_place(TensorId id);

  void compile_dense_backward(TensorId id);

  void compile_conv_backward(TensorId id);

  void compile_pool_backward(TensorId id);
  /// True when `conv` has a fused ReLU and its only reader is a 2x2 max pooling run by
  /// max_pool_blocked.hpp: the pooling's backward then applies the ReLU derivative — for the
  /// one input that receives gradient, the window's maximum, relu'(y) = [pooled value > 0] —
  /// which saves the full-size ReLU-backward pass over the convolution's output.
  bool pool_masks_relu(TensorId conv) const;

  void compile_bn_backward(TensorId id);

  /// One scratchpad buffer for every primitive (they never run concurrently).
  void bind_scratchpad();

  OnednnKernels& k_;
  const dnnl::engine& eng_;
  NetGraph g_;
  NetOptions o_;
  std::int64_t n_;
  bool native_;  ///< Precision::bf16 on native bf16 kernels
  bool bf16_;    ///< Precision::bf16 emulated by rounding fp32 tensors
  dt act_dt_;    ///< element type of activations and their gradients (bf16 when native_)
  MatrixView in32_, in_grad32_;  ///< native: the caller's fp32 input and input gradient
  std::vector<Tensor> t_;
  std::vector<NodeState> st_;
  std::vector<bool> runs_backward_, wants_grad_;
  std::vector<AlignedBuffer> buffers_;  // every buffer the net allocates (moving keeps addresses)
  std::map<float*, std::int64_t> owner_;               ///< evaluation: activation buffers in use (floats)
  std::vector<std::pair<std::int64_t, float*>> free_;  ///< evaluation: recyclable activation buffers
  std::vector<std::unique_ptr<Prim>> prims_;
  std::vector<Step> fwd_, bwd_;
  AlignedBuffer scratch_;
  MatrixView out_, out_grad_;
  struct PendingImpl {
    TensorId node;
    const char* what;
    const Prim* prim;
  };
  std::vector<PendingImpl> pending_impl_;
  std::vector<std::pair<TensorId, std::string>> impls_;
};

}  // namespace dlsweep::trainer::kernels::onednn_net
