// onednn_net.cpp — OnednnKernels::make_net: a NetGraph compiled into two lists of oneDNN
// primitives with bound arguments (forward, backward), built once and replayed every step —
// the structure of oneDNN's examples/cnn_training_f32.cpp:
//  - convolutions are created with format_tag::any for source, weights and destination; the
//    layout they choose is what flows to the next layer, and a reorder is inserted only where
//    a consumer wants a different one (the user weights [out, in·k·k] are reordered into the
//    chosen layout each forward, the weight gradient back after backward);
//  - pooling, batch norm, ReLU and add work in the layout of their input; dense layers
//    (OnednnDense matmuls) read row-major NCHW rows, so a blocked input is flattened by one
//    reorder (and its gradient reordered back);
//  - every backward primitive descriptor gets its forward one as the hint;
//  - fusions: ReLU after conv/dense/add as a post-op, after batch norm as fuse_norm_relu.
// Gradients: the backward list is compiled in reverse node order, so when a node is reached
// every contribution to its output gradient is known: a tensor with one reader gets its
// gradient written in place (or shares the contribution's buffer, e.g. an add's output
// gradient), a tensor with several readers gets their contributions summed by binary adds
// just before its producer runs; layouts are converted by reorders only where they differ.
// All primitives share one user scratchpad (they run one after another).
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainer/kernels/net.hpp"
#include "trainer/kernels/onednn_kernels.hpp"
#include "trainer/kernels/reference_layers.hpp"

namespace dlsweep::trainer::kernels {

namespace {

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
  dnnl::algorithm pool_alg = dnnl::algorithm::pooling_max;
  memory::dims pool_stride, pool_kernel, pool_pad_l, pool_pad_r;
  std::optional<dnnl::batch_normalization_forward::primitive_desc> bn_pd;
  std::optional<dnnl::eltwise_forward::primitive_desc> relu_pd;
  memory workspace, mean, var;
  std::unique_ptr<DenseKernel> dense;
  MatrixView dense_x, dense_w;  ///< what the dense layer reads (flattened input, weights copy)
  memory flat;                  ///< dense: the flattened input when x is not a matrix
};

dnnl::primitive_attr scratch_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr a = scratch_attr();
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    a.set_post_ops(ops);
  }
  return a;
}

/// [n, c, h, w] stored as rows of c·h·w floats with row stride ld.
memory::desc rows_md(std::int64_t n, Shape s, std::int64_t ld) {
  return memory::desc({n, s.c, s.h, s.w}, dt::f32, memory::dims{ld, s.h * s.w, s.w, 1});
}

memory::dims dims4(std::int64_t n, Shape s) { return {n, s.c, s.h, s.w}; }

class OnednnNet final : public Net {
 public:
  OnednnNet(OnednnKernels& k, const NetGraph& g, const NetOptions& o)
      : k_(k), eng_(k.engine()), g_(g), o_(o), n_(o.batch), bf16_(o.precision == Precision::bf16) {
    const auto nodes = g_.nodes();
    if (n_ < 1) throw std::invalid_argument("OnednnNet: batch size must be positive");
    if (nodes.empty() || nodes[0].op != Op::input) throw std::invalid_argument("OnednnNet: graph without input");
    for (TensorId t = 0; t + 1 < static_cast<TensorId>(nodes.size()); ++t)
      if (g_.consumers(t) == 0) throw std::invalid_argument("OnednnNet: a node's output is never used: " + describe_node(g_, t));
    t_.resize(nodes.size());
    st_.resize(nodes.size());
    plan_gradients();
    if (bf16_) fwd_.push_back({nullptr, [this] { round_tensor(t_[0]); }, -1});
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      compile_forward(static_cast<TensorId>(i));
      if (!o_.train) release_dead_inputs(static_cast<TensorId>(i));
    }
    compile_output();
    if (o_.train) {
      for (std::size_t i = nodes.size(); i-- > 1;)
        if (runs_backward_[i]) compile_backward(static_cast<TensorId>(i));
      if (wants_grad_[0]) gather_diff(0);
    }
    // Dense layers no gradient passes through (evaluation nets) run forward only.
    for (std::size_t i = 1; i < nodes.size(); ++i)
      if (nodes[i].op == Op::dense && !st_[i].dense) make_dense(static_cast<TensorId>(i), MatrixView{}, false);
    bind_scratchpad();
  }

  MatrixView input() override { return matrix_view(t_[0].mem, t_[0]); }
  MatrixView output() override { return out_; }
  MatrixView output_grad() override {
    if (!o_.train) throw std::logic_error("OnednnNet::output_grad on an evaluation net");
    return out_grad_;
  }
  MatrixView input_grad() override {
    if (!wants_grad_[0]) throw std::logic_error("OnednnNet::input_grad without NetOptions::input_grad");
    return matrix_view(t_[0].dmem, t_[0]);
  }

  void forward() override { run(fwd_, {}); }
  void backward(const LayerReadyFn& on_ready) override {
    if (!o_.train) throw std::logic_error("OnednnNet::backward on an evaluation net");
    run(bwd_, on_ready);
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> out;
    for (TensorId t = 0; t < static_cast<TensorId>(t_.size()); ++t) {
      std::string s = describe_node(g_, t);
      for (const auto& [node, text] : impls_)
        if (node == t) s += " | " + text;
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  // ---- plumbing -------------------------------------------------------------------------
  void run(const std::vector<Step>& steps, const LayerReadyFn& on_ready) {
    for (const Step& s : steps) {
      if (s.prim) k_.execute(s.prim->prim, s.prim->args);
      else if (s.fn) s.fn();
      else if (on_ready) on_ready(s.ready_tag);
    }
  }

  memory alloc(const memory::desc& md) {
    buffers_.emplace_back(static_cast<std::int64_t>((md.get_size() + sizeof(float) - 1) / sizeof(float)));
    return memory(md, eng_, buffers_.back().data());
  }

  Prim* new_prim(TensorId node, const char* what) {
    prims_.push_back(std::make_unique<Prim>());
    pending_impl_.push_back({node, what, prims_.back().get()});
    return prims_.back().get();
  }

  /// A reorder src → dst (dst += src when accumulate), appended to `list`.
  void add_reorder(std::vector<Step>& list, TensorId node, const char* what, const memory& src, const memory& dst,
                   bool accumulate = false) {
    dnnl::primitive_attr attr = scratch_attr();
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.f);
      attr.set_post_ops(ops);
    }
    dnnl::reorder::primitive_desc pd(eng_, src.get_desc(), eng_, dst.get_desc(), attr);
    Prim* p = new_prim(node, what);
    p->create<dnnl::reorder>(pd);
    p->arg(DNNL_ARG_FROM, src);
    p->arg(DNNL_ARG_TO, dst);
    list.push_back({p, {}, -1});
  }

  static std::int64_t floats(const memory& m) { return static_cast<std::int64_t>(m.get_desc().get_size() / sizeof(float)); }

  void round_tensor(const Tensor& t) { round_to_bf16(static_cast<float*>(t.mem.get_data_handle()), floats(t.mem)); }

  MatrixView matrix_view(const memory& m, const Tensor& t) const {
    if (!t.matrix) throw std::logic_error("OnednnNet: tensor is not stored as a matrix");
    return MatrixView{static_cast<float*>(m.get_data_handle()), n_, t.shape.size(), t.ld};
  }

  // Which nodes run backward and which tensors need a gradient (see reference_net.cpp).
  void plan_gradients() {
    const auto nodes = g_.nodes();
    runs_backward_.assign(nodes.size(), false);
    wants_grad_.assign(nodes.size(), false);
    wants_grad_[0] = o_.train && o_.input_grad;
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      bool run = nodes[i].tag >= 0;
      for (TensorId in : nodes[i].inputs) run = run || wants_grad_[static_cast<std::size_t>(in)];
      runs_backward_[i] = wants_grad_[i] = o_.train && run;
    }
  }

  /// A tensor stored as rows: padded stride when only dense layers read it (GEMM-friendly,
  /// matrix.hpp), dense otherwise (what pooling/batch norm/convolution accept).
  void make_matrix_tensor(TensorId id) {
    Tensor& t = t_[static_cast<std::size_t>(id)];
    bool only_dense = true;
    for (const auto& nd : g_.nodes())
      for (TensorId in : nd.inputs)
        if (in == id && nd.op != Op::dense) only_dense = false;
    t.matrix = true;
    t.ld = only_dense ? padded_ld(t.shape.size()) : t.shape.size();
    t.md = rows_md(n_, t.shape, t.ld);
    t.mem = activation(id, t.md);
  }

  void set_output(TensorId id, const memory::desc& md) {
    Tensor& t = t_[static_cast<std::size_t>(id)];
    t.md = md;
    t.mem = activation(id, t.md);
  }

  /// The memory of node id's output. Evaluation nets recycle the buffers of tensors whose
  /// last reader has run (forward order is execution order), so a deep net needs a few
  /// activation buffers instead of one per layer; training nets keep every activation for
  /// backward. The input (filled by the caller) and the output are never recycled.
  memory activation(TensorId id, const memory::desc& md) {
    const std::int64_t need = static_cast<std::int64_t>((md.get_size() + sizeof(float) - 1) / sizeof(float));
    if (!o_.train && id != 0)
      for (std::size_t k = 0; k < free_.size(); ++k)
        if (free_[k].first >= need) {
          float* p = free_[k].second;
          owner_[p] = free_[k].first;
          free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(k));
          return memory(md, eng_, p);
        }
    memory m = alloc(md);
    owner_[static_cast<float*>(m.get_data_handle())] = need;
    return m;
  }
  void release_dead_inputs(TensorId id) {
    const auto nodes = g_.nodes();
    for (TensorId x : nodes[static_cast<std::size_t>(id)].inputs) {
      if (x == 0) continue;
      TensorId last = -1;
      for (TensorId j = 0; j < static_cast<TensorId>(nodes.size()); ++j)
        for (TensorId in : nodes[static_cast<std::size_t>(j)].inputs)
          if (in == x) last = j;
      if (last != id) continue;
      float* p = static_cast<float*>(t_[static_cast<std::size_t>(x)].mem.get_data_handle());
      if (auto it = owner_.find(p); it != owner_.end()) {
        free_.push_back({it->second, p});
        owner_.erase(it);
      }
    }
  }

  void ensure_diff(Tensor& t) {
    if (!t.dmem) t.dmem = alloc(t.md);
  }

  /// The producer of t rewrites its own output gradient in place (ReLU backward).
  bool modifies_diff_in_place(TensorId id) const {
    const NetNode& nd = g_.node(id);
    return (nd.op == Op::conv && nd.conv.act == Activation::relu) || (nd.op != Op::conv && nd.act == Activation::relu);
  }

  struct Target {
    memory mem;
    bool then_contribute = false;  ///< mem is a temporary: call contribute(x, mem) after the writer
  };
  /// Where a backward primitive should write its contribution to dL/dx in layout md: dx itself
  /// when it is the only contribution and the layouts match, else a buffer of its own.
  Target write_target(TensorId x, const memory::desc& md) {
    Tensor& t = t_[static_cast<std::size_t>(x)];
    if (g_.consumers(x) == 1 && md == t.md && !t.dmem) {
      ensure_diff(t);
      t.direct = true;
      return {t.dmem, false};
    }
    return {alloc(md), true};
  }
  /// Records a contribution to dL/dx held in src (summed when x's producer is compiled).
  void contribute(TensorId x, const memory& src, bool exclusive = true) {
    t_[static_cast<std::size_t>(x)].pending.push_back({src, exclusive});
  }
  /// Makes dL/dx complete before x's producer reads it — every reader of x runs earlier in
  /// backward. One contribution in x's layout becomes dx itself (no copy) unless it is shared
  /// and x's producer rewrites its gradient in place; otherwise the contributions are brought
  /// to x's layout and summed with binary adds (one pass for the usual two).
  void gather_diff(TensorId x) {
    Tensor& t = t_[static_cast<std::size_t>(x)];
    if (t.direct || t.pending.empty()) return;
    const auto& p0 = t.pending.front();
    if (t.pending.size() == 1 && !t.dmem && p0.mem.get_desc() == t.md && (p0.exclusive || !modifies_diff_in_place(x))) {
      t.dmem = memory(t.md, eng_, p0.mem.get_data_handle());
      return;
    }
    ensure_diff(t);
    std::vector<memory> parts;
    for (const auto& p : t.pending) {
      if (p.mem.get_desc() == t.md) {
        parts.push_back(p.mem);
        continue;
      }
      // A contribution in another layout: reordered (into dx itself when it is the only one).
      memory m = t.pending.size() == 1 ? t.dmem : alloc(t.md);
      add_reorder(bwd_, x, "grad_reorder", p.mem, m);
      parts.push_back(m);
    }
    if (parts.size() == 1) {
      if (parts[0] != t.dmem) add_reorder(bwd_, x, "grad_copy", parts[0], t.dmem);
      return;
    }
    for (std::size_t k = 1; k < parts.size(); ++k) {
      const memory& a = k == 1 ? parts[0] : t.dmem;
      dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, t.md, t.md, t.md), scratch_attr(),
                                      eng_);
      Prim* p = new_prim(x, "grad_sum");
      p->create<dnnl::binary>(pd);
      p->arg(DNNL_ARG_SRC_0, a);
      p->arg(DNNL_ARG_SRC_1, parts[k]);
      p->arg(DNNL_ARG_DST, t.dmem);
      bwd_.push_back({p, {}, -1});
    }
  }

  // ---- forward --------------------------------------------------------------------------
  void compile_forward(TensorId id) {
    const NetNode& nd = g_.node(id);
    Tensor& y = t_[static_cast<std::size_t>(id)];
    y.shape = nd.shape;
    const auto prop = o_.train ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    switch (nd.op) {
      case Op::input: make_matrix_tensor(id); return;
      case Op::dense: compile_dense_forward(id); break;
      case Op::conv: compile_conv_forward(id, prop); break;
      case Op::pool: compile_pool_forward(id, prop); break;
      case Op::batch_norm: compile_bn_forward(id, prop); break;
      case Op::relu: {
        const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
        dnnl::eltwise_forward::primitive_desc pd(
            dnnl::eltwise_forward::desc(prop, dnnl::algorithm::eltwise_relu_use_dst_for_bwd, x.md, 0.f, 0.f),
            scratch_attr(), eng_);
        set_output(id, x.md);
        Prim* p = new_prim(id, "fwd");
        p->create<dnnl::eltwise_forward>(pd);
        p->arg(DNNL_ARG_SRC, x.mem);
        p->arg(DNNL_ARG_DST, y.mem);
        fwd_.push_back({p, {}, -1});
        st_[static_cast<std::size_t>(id)].relu_pd = pd;
        break;
      }
      case Op::add: {
        const Tensor& a = t_[static_cast<std::size_t>(nd.inputs[0])];
        const Tensor& b = t_[static_cast<std::size_t>(nd.inputs[1])];
        dnnl::binary::primitive_desc pd(dnnl::binary::desc(dnnl::algorithm::binary_add, a.md, b.md, a.md),
                                        relu_attr(nd.act == Activation::relu), eng_);
        set_output(id, a.md);
        Prim* p = new_prim(id, "fwd");
        p->create<dnnl::binary>(pd);
        p->arg(DNNL_ARG_SRC_0, a.mem);
        p->arg(DNNL_ARG_SRC_1, b.mem);
        p->arg(DNNL_ARG_DST, y.mem);
        fwd_.push_back({p, {}, -1});
        break;
      }
    }
    if (bf16_ && id + 1 < static_cast<TensorId>(t_.size())) fwd_.push_back({nullptr, [this, id] { round_tensor(t_[static_cast<std::size_t>(id)]); }, -1});
  }

  void compile_dense_forward(TensorId id) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
    make_matrix_tensor(id);
    // The input as rows: the tensor itself, or a flattened copy of a blocked one.
    if (x.matrix) {
      s.dense_x = matrix_view(x.mem, x);
    } else {
      const Shape flat{x.shape.size(), 1, 1};
      const std::int64_t ld = padded_ld(flat.size());
      s.flat = alloc(rows_md(n_, x.shape, ld));
      add_reorder(fwd_, id, "flatten", x.mem, s.flat);
      s.dense_x = MatrixView{static_cast<float*>(s.flat.get_data_handle()), n_, flat.size(), ld};
    }
    s.dense_w = nd.dense_params.w;
    if (bf16_) {  // the layer computes with a rounded copy of the fp32 master weights
      const MatrixView w = nd.dense_params.w;
      buffers_.emplace_back(w.span());
      s.dense_w = buffers_.back().view(w.rows, w.cols, w.ld);
      fwd_.push_back({nullptr, [w, c = s.dense_w] {
                        std::copy(w.data, w.data + w.span(), c.data);
                        round_to_bf16(c.data, c.span());
                      }, -1});
    }
    // The kernel itself is built once its backward targets are known (compile_backward).
    fwd_.push_back({nullptr, [&s] { s.dense->forward(); }, -1});
  }

  void make_dense(TensorId id, MatrixView dx, bool trainable) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    Tensor& y = t_[static_cast<std::size_t>(id)];
    DenseBinding b;
    b.x = s.dense_x;
    b.y = matrix_view(y.mem, y);
    b.w = s.dense_w;
    b.b = nd.dense_params.b;
    if (trainable) {
      b.dy = matrix_view(y.dmem, y);
      b.dw = nd.dense_params.dw;
      b.db = nd.dense_params.db;
      b.dx = dx;
    }
    s.dense = k_.make_dense(nd.act, b);
    impls_.push_back({id, s.dense->describe()});
  }

  void compile_conv_forward(TensorId id, dnnl::prop_kind prop) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
    const ConvSpec& c = nd.conv;
    const std::int64_t k = c.kernel;
    auto any = [&](memory::dims d) { return memory::desc(d, dt::f32, tag::any); };
    const memory::dims wdims{c.out_channels, x.shape.c, k, k};
    const memory::dims stride{c.stride, c.stride}, pad{c.pad, c.pad};
    const bool bias = nd.conv_params.b != nullptr;
    const memory::desc bias_md({c.out_channels}, dt::f32, tag::x);
    auto d = bias ? dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)),
                                                    any(wdims), bias_md, any(dims4(n_, nd.shape)), stride, pad, pad)
                  : dnnl::convolution_forward::desc(prop, dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)),
                                                    any(wdims), any(dims4(n_, nd.shape)), stride, pad, pad);
    dnnl::convolution_forward::primitive_desc pd(d, relu_attr(c.act == Activation::relu), eng_);
    s.conv_pd = pd;
    // Source in the chosen layout.
    s.conv_src = x.mem;
    if (pd.src_desc() != x.md) {
      s.conv_src = alloc(pd.src_desc());
      add_reorder(fwd_, id, "src_reorder", x.mem, s.conv_src);
    }
    // Weights: user [out, in·k·k] rows = OIHW with a row stride; reordered (and rounded for
    // bf16) into the chosen layout every forward, since the optimizer updates the user copy.
    const MatrixView w = nd.conv_params.w;
    s.user_w_md = memory::desc(wdims, dt::f32, memory::dims{w.ld, k * k, k, 1});
    const memory user_w(s.user_w_md, eng_, w.data);
    s.conv_wei = user_w;
    if (pd.weights_desc() != s.user_w_md || bf16_) {
      s.conv_wei = alloc(pd.weights_desc());
      add_reorder(fwd_, id, "weights_reorder", user_w, s.conv_wei);
      if (bf16_) fwd_.push_back({nullptr, [this, m = s.conv_wei] { round_to_bf16(static_cast<float*>(m.get_data_handle()), floats(m)); }, -1});
    }
    set_output(id, pd.dst_desc());
    Prim* p = new_prim(id, "fwd");
    p->create<dnnl::convolution_forward>(pd);
    p->arg(DNNL_ARG_SRC, s.conv_src);
    p->arg(DNNL_ARG_WEIGHTS, s.conv_wei);
    if (bias) p->arg(DNNL_ARG_BIAS, memory(bias_md, eng_, nd.conv_params.b));
    p->arg(DNNL_ARG_DST, t_[static_cast<std::size_t>(id)].mem);
    fwd_.push_back({p, {}, -1});
  }

  void compile_pool_forward(TensorId id, dnnl::prop_kind prop) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
    const PoolSpec& ps = nd.pool;
    const bool global = ps.kind == PoolSpec::Kind::global_avg;
    const memory::dims kernel = global ? memory::dims{x.shape.h, x.shape.w} : memory::dims{ps.kernel, ps.kernel};
    const memory::dims stride = global ? kernel : memory::dims{ps.stride, ps.stride};
    const memory::dims pad_l = global ? memory::dims{0, 0} : memory::dims{ps.pad, ps.pad};
    // Right padding so that the output size matches window_out (floor), as the reference does.
    memory::dims pad_r = pad_l;
    if (!global)
      for (int a = 0; a < 2; ++a) {
        const std::int64_t in = a == 0 ? x.shape.h : x.shape.w, out = a == 0 ? nd.shape.h : nd.shape.w;
        pad_r[static_cast<std::size_t>(a)] = (out - 1) * ps.stride + ps.kernel - in - ps.pad;
      }
    const auto alg = global ? dnnl::algorithm::pooling_avg_exclude_padding : dnnl::algorithm::pooling_max;
    dnnl::pooling_forward::primitive_desc pd(
        dnnl::pooling_forward::desc(prop, alg, x.md, memory::desc(dims4(n_, nd.shape), dt::f32, tag::any), stride,
                                    kernel, pad_l, pad_r),
        scratch_attr(), eng_);
    s.pool_pd = pd;
    s.pool_alg = alg;
    s.pool_stride = stride;
    s.pool_kernel = kernel;
    s.pool_pad_l = pad_l;
    s.pool_pad_r = pad_r;
    set_output(id, pd.dst_desc());
    Prim* p = new_prim(id, "fwd");
    p->create<dnnl::pooling_forward>(pd);
    p->arg(DNNL_ARG_SRC, x.mem);
    p->arg(DNNL_ARG_DST, t_[static_cast<std::size_t>(id)].mem);
    if (o_.train && !global) {
      s.workspace = alloc(pd.workspace_desc());
      p->arg(DNNL_ARG_WORKSPACE, s.workspace);
    }
    fwd_.push_back({p, {}, -1});
  }

  dnnl::normalization_flags bn_flags(const NetNode& nd) const {
    auto f = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (nd.bn.relu) f = f | dnnl::normalization_flags::fuse_norm_relu;
    if (!o_.train) f = f | dnnl::normalization_flags::use_global_stats;
    return f;
  }

  void compile_bn_forward(TensorId id, dnnl::prop_kind prop) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
    const BatchNormParams& bp = nd.bn_params;
    dnnl::batch_normalization_forward::primitive_desc pd(
        dnnl::batch_normalization_forward::desc(prop, x.md, static_cast<float>(nd.bn.eps), bn_flags(nd)),
        scratch_attr(), eng_);
    s.bn_pd = pd;
    set_output(id, x.md);
    const memory::desc c_md({x.shape.c}, dt::f32, tag::x);
    Prim* p = new_prim(id, "fwd");
    p->create<dnnl::batch_normalization_forward>(pd);
    p->arg(DNNL_ARG_SRC, x.mem);
    p->arg(DNNL_ARG_DST, t_[static_cast<std::size_t>(id)].mem);
    p->arg(DNNL_ARG_SCALE, memory(c_md, eng_, bp.scale));
    p->arg(DNNL_ARG_SHIFT, memory(c_md, eng_, bp.shift));
    if (o_.train) {
      s.mean = alloc(c_md);
      s.var = alloc(c_md);
      if (nd.bn.relu) {
        s.workspace = alloc(pd.workspace_desc());
        p->arg(DNNL_ARG_WORKSPACE, s.workspace);
      }
    } else {
      s.mean = memory(c_md, eng_, bp.running_mean);
      s.var = memory(c_md, eng_, bp.running_var);
    }
    p->arg(DNNL_ARG_MEAN, s.mean);
    p->arg(DNNL_ARG_VARIANCE, s.var);
    fwd_.push_back({p, {}, -1});
    if (o_.train) {
      const std::int64_t m = n_ * x.shape.h * x.shape.w, c = x.shape.c;
      fwd_.push_back({nullptr, [mean = s.mean, var = s.var, c, m, mom = nd.bn.momentum, bp] {
                        ref::update_running_stats(static_cast<const float*>(mean.get_data_handle()),
                                                  static_cast<const float*>(var.get_data_handle()), c, m, mom,
                                                  bp.running_mean, bp.running_var);
                      }, -1});
    }
  }

  void compile_output() {
    Tensor& y = t_.back();
    if (y.matrix) {
      out_ = matrix_view(y.mem, y);
      if (o_.train) {
        ensure_diff(y);
        y.direct = true;
        out_grad_ = matrix_view(y.dmem, y);
      }
      return;
    }
    // A blocked last tensor (graphs of single layers in tests): copied out as rows.
    const std::int64_t size = y.shape.size(), ld = padded_ld(size);
    const memory out = alloc(rows_md(n_, y.shape, ld));
    add_reorder(fwd_, static_cast<TensorId>(t_.size()) - 1, "to_rows", y.mem, out);
    out_ = MatrixView{static_cast<float*>(out.get_data_handle()), n_, size, ld};
    if (o_.train) {
      const memory grad = alloc(rows_md(n_, y.shape, ld));
      ensure_diff(y);
      y.direct = true;
      add_reorder(bwd_, static_cast<TensorId>(t_.size()) - 1, "from_rows", grad, y.dmem);
      out_grad_ = MatrixView{static_cast<float*>(grad.get_data_handle()), n_, size, ld};
    }
  }

  // ---- backward -------------------------------------------------------------------------
  void compile_backward(TensorId id) {
    const NetNode& nd = g_.node(id);
    Tensor& y = t_[static_cast<std::size_t>(id)];
    gather_diff(id);
    if (!y.dmem) throw std::logic_error("OnednnNet: no gradient reaches " + describe_node(g_, id));
    if (bf16_) bwd_.push_back({nullptr, [this, m = y.dmem] { round_to_bf16(static_cast<float*>(m.get_data_handle()), floats(m)); }, -1});
    switch (nd.op) {
      case Op::input: break;
      case Op::dense: compile_dense_backward(id); break;
      case Op::conv: compile_conv_backward(id); break;
      case Op::pool: compile_pool_backward(id); break;
      case Op::batch_norm: compile_bn_backward(id); break;
      case Op::relu: {
        const TensorId xi = nd.inputs[0];
        if (!wants_grad_[static_cast<std::size_t>(xi)]) break;
        const auto alg = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
        dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(alg, y.md, y.md, 0.f, 0.f), scratch_attr(),
                                                  eng_, *st_[static_cast<std::size_t>(id)].relu_pd);
        Target to = write_target(xi, pd.diff_src_desc());
        Prim* p = new_prim(id, "bwd");
        p->create<dnnl::eltwise_backward>(pd);
        p->arg(DNNL_ARG_DST, y.mem);
        p->arg(DNNL_ARG_DIFF_DST, y.dmem);
        p->arg(DNNL_ARG_DIFF_SRC, to.mem);
        bwd_.push_back({p, {}, -1});
        if (to.then_contribute) contribute(xi, to.mem);
        break;
      }
      case Op::add: {
        if (nd.act == Activation::relu) relu_backward_in_place(id);
        for (TensorId xi : nd.inputs)
          if (wants_grad_[static_cast<std::size_t>(xi)]) contribute(xi, y.dmem, false);  // shared by both inputs
        break;
      }
    }
    // Convolutions report their layer between dW and dX (compile_conv_backward).
    if (nd.tag >= 0 && nd.op != Op::conv) bwd_.push_back({nullptr, {}, nd.tag});
  }

  /// dy ⊙= [y > 0] in place (ReLU fused into the forward primitive).
  void relu_backward_in_place(TensorId id) {
    Tensor& y = t_[static_cast<std::size_t>(id)];
    const auto alg = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    dnnl::eltwise_forward::primitive_desc hint(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, y.md, 0.f, 0.f), eng_);
    dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(alg, y.md, y.md, 0.f, 0.f), scratch_attr(),
                                              eng_, hint);
    Prim* p = new_prim(id, "relu_bwd");
    p->create<dnnl::eltwise_backward>(pd);
    p->arg(DNNL_ARG_DST, y.mem);
    p->arg(DNNL_ARG_DIFF_DST, y.dmem);
    p->arg(DNNL_ARG_DIFF_SRC, y.dmem);
    bwd_.push_back({p, {}, -1});
  }

  void compile_dense_backward(TensorId id) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    const TensorId xi = nd.inputs[0];
    const Tensor& x = t_[static_cast<std::size_t>(xi)];
    MatrixView dx;
    std::optional<Target> to;
    if (wants_grad_[static_cast<std::size_t>(xi)]) {
      const memory::desc rows = x.matrix ? x.md : s.flat.get_desc();
      to = write_target(xi, rows);
      const std::int64_t ld = x.matrix ? x.ld : padded_ld(x.shape.size());
      dx = MatrixView{static_cast<float*>(to->mem.get_data_handle()), n_, x.shape.size(), ld};
    }
    make_dense(id, dx, true);
    // The kernel runs relu backward, db, dw, then dx; dw/db are final before dx, but the
    // kernel runs them as one unit, so the layer is reported after it.
    bwd_.push_back({nullptr, [&s] { s.dense->backward(); }, -1});
    if (to && to->then_contribute) contribute(xi, to->mem);
  }

  void compile_conv_backward(TensorId id) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    Tensor& y = t_[static_cast<std::size_t>(id)];
    const TensorId xi = nd.inputs[0];
    const Tensor& x = t_[static_cast<std::size_t>(xi)];
    const ConvSpec& c = nd.conv;
    if (c.act == Activation::relu) relu_backward_in_place(id);
    auto any = [&](memory::dims d) { return memory::desc(d, dt::f32, tag::any); };
    const memory::dims wdims{c.out_channels, x.shape.c, c.kernel, c.kernel};
    const memory::dims stride{c.stride, c.stride}, pad{c.pad, c.pad};
    const bool bias = nd.conv_params.b != nullptr;
    const memory::desc bias_md({c.out_channels}, dt::f32, tag::x);

    // dW (and db) first: the layer's gradients are final before dX is computed.
    auto wd = bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)),
                                                             any(wdims), bias_md, any(dims4(n_, y.shape)), stride, pad, pad)
                   : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)),
                                                             any(wdims), any(dims4(n_, y.shape)), stride, pad, pad);
    dnnl::convolution_backward_weights::primitive_desc wpd(wd, scratch_attr(), eng_, *s.conv_pd);
    // With very few input channels (a first layer on grey images) oneDNN 2.6 picks a blocked
    // source padded to 8 channels and spends 8x the work; channels-last is 5x faster there
    // (measured on AVX2 for 1->32 5x5 at batch 256: 24 ms vs 4.9 ms, plus a 3 ms reorder of dy).
    if (wpd.src_desc().data.padded_dims[1] > 2 * x.shape.c) {
      auto nhwc = [&](memory::dims d) { return memory::desc(d, dt::f32, tag::nhwc); };
      auto wd2 = bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, nhwc(dims4(n_, x.shape)),
                                                                any(wdims), bias_md, nhwc(dims4(n_, y.shape)), stride, pad, pad)
                      : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, nhwc(dims4(n_, x.shape)),
                                                                any(wdims), nhwc(dims4(n_, y.shape)), stride, pad, pad);
      dnnl::convolution_backward_weights::primitive_desc alt(wd2, scratch_attr(), eng_, *s.conv_pd, true);
      if (alt && std::string(alt.impl_info_str()).rfind("ref", 0) != 0) wpd = alt;
    }
    memory src = s.conv_src;
    if (wpd.src_desc() != src.get_desc()) {
      src = alloc(wpd.src_desc());
      add_reorder(bwd_, id, "bwd_w_src_reorder", x.mem, src);
    }
    memory ddst = y.dmem;
    if (wpd.diff_dst_desc() != y.md) {
      ddst = alloc(wpd.diff_dst_desc());
      add_reorder(bwd_, id, "bwd_w_diff_dst_reorder", y.dmem, ddst);
    }
    const MatrixView dw = nd.conv_params.dw;
    const memory user_dw(memory::desc(wdims, dt::f32, memory::dims{dw.ld, c.kernel * c.kernel, c.kernel, 1}), eng_, dw.data);
    memory dwei = user_dw;
    if (wpd.diff_weights_desc() != user_dw.get_desc()) dwei = alloc(wpd.diff_weights_desc());
    Prim* p = new_prim(id, "bwd_w");
    p->create<dnnl::convolution_backward_weights>(wpd);
    p->arg(DNNL_ARG_SRC, src);
    p->arg(DNNL_ARG_DIFF_DST, ddst);
    p->arg(DNNL_ARG_DIFF_WEIGHTS, dwei);
    if (bias) p->arg(DNNL_ARG_DIFF_BIAS, memory(bias_md, eng_, nd.conv_params.db));
    bwd_.push_back({p, {}, -1});
    if (dwei != user_dw) add_reorder(bwd_, id, "diff_weights_reorder", dwei, user_dw);
    if (nd.tag >= 0) bwd_.push_back({nullptr, {}, nd.tag});

    if (!wants_grad_[static_cast<std::size_t>(xi)]) return;
    dnnl::convolution_backward_data::primitive_desc dpd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)), any(wdims),
                                              any(dims4(n_, y.shape)), stride, pad, pad),
        scratch_attr(), eng_, *s.conv_pd);
    memory wei = s.conv_wei;
    if (dpd.weights_desc() != wei.get_desc()) {
      wei = alloc(dpd.weights_desc());
      add_reorder(bwd_, id, "bwd_d_weights_reorder", s.conv_wei, wei);
    }
    memory ddst2 = y.dmem;
    if (dpd.diff_dst_desc() != y.md) {
      ddst2 = dpd.diff_dst_desc() == ddst.get_desc() ? ddst : alloc(dpd.diff_dst_desc());
      if (ddst2 != ddst) add_reorder(bwd_, id, "bwd_d_diff_dst_reorder", y.dmem, ddst2);
    }
    Target to = write_target(xi, dpd.diff_src_desc());
    Prim* q = new_prim(id, "bwd_d");
    q->create<dnnl::convolution_backward_data>(dpd);
    q->arg(DNNL_ARG_DIFF_DST, ddst2);
    q->arg(DNNL_ARG_WEIGHTS, wei);
    q->arg(DNNL_ARG_DIFF_SRC, to.mem);
    bwd_.push_back({q, {}, -1});
    if (to.then_contribute) contribute(xi, to.mem);
  }

  void compile_pool_backward(TensorId id) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    Tensor& y = t_[static_cast<std::size_t>(id)];
    const TensorId xi = nd.inputs[0];
    const Tensor& x = t_[static_cast<std::size_t>(xi)];
    dnnl::pooling_backward::primitive_desc pd(
        dnnl::pooling_backward::desc(s.pool_alg, x.md, y.md, s.pool_stride, s.pool_kernel, s.pool_pad_l, s.pool_pad_r),
        scratch_attr(), eng_, *s.pool_pd);
    Target to = write_target(xi, pd.diff_src_desc());
    Prim* p = new_prim(id, "bwd");
    p->create<dnnl::pooling_backward>(pd);
    p->arg(DNNL_ARG_DIFF_DST, y.dmem);
    p->arg(DNNL_ARG_DIFF_SRC, to.mem);
    if (s.workspace) p->arg(DNNL_ARG_WORKSPACE, s.workspace);
    bwd_.push_back({p, {}, -1});
    if (to.then_contribute) contribute(xi, to.mem);
  }

  void compile_bn_backward(TensorId id) {
    const NetNode& nd = g_.node(id);
    NodeState& s = st_[static_cast<std::size_t>(id)];
    Tensor& y = t_[static_cast<std::size_t>(id)];
    const TensorId xi = nd.inputs[0];
    const Tensor& x = t_[static_cast<std::size_t>(xi)];
    const BatchNormParams& bp = nd.bn_params;
    dnnl::batch_normalization_backward::primitive_desc pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, y.md, x.md, static_cast<float>(nd.bn.eps),
                                                 bn_flags(nd)),
        scratch_attr(), eng_, *s.bn_pd);
    // The primitive always computes dX; without a consumer for it, it goes to a scratch buffer.
    Target to = wants_grad_[static_cast<std::size_t>(xi)] ? write_target(xi, pd.diff_src_desc())
                                                          : Target{alloc(pd.diff_src_desc()), false};
    const memory::desc c_md({x.shape.c}, dt::f32, tag::x);
    Prim* p = new_prim(id, "bwd");
    p->create<dnnl::batch_normalization_backward>(pd);
    p->arg(DNNL_ARG_SRC, x.mem);
    p->arg(DNNL_ARG_MEAN, s.mean);
    p->arg(DNNL_ARG_VARIANCE, s.var);
    p->arg(DNNL_ARG_DIFF_DST, y.dmem);
    p->arg(DNNL_ARG_SCALE, memory(c_md, eng_, bp.scale));
    p->arg(DNNL_ARG_SHIFT, memory(c_md, eng_, bp.shift));  // oneDNN 2.6 refuses to run without it
    if (nd.bn.relu) p->arg(DNNL_ARG_WORKSPACE, s.workspace);
    p->arg(DNNL_ARG_DIFF_SRC, to.mem);
    p->arg(DNNL_ARG_DIFF_SCALE, memory(c_md, eng_, bp.dscale));
    p->arg(DNNL_ARG_DIFF_SHIFT, memory(c_md, eng_, bp.dshift));
    bwd_.push_back({p, {}, -1});
    if (to.then_contribute) contribute(xi, to.mem);
  }

  // One scratchpad buffer for every primitive (they never run concurrently).
  void bind_scratchpad() {
    std::size_t bytes = 0;
    for (const auto& p : prims_) bytes = std::max(bytes, p->scratch_md.get_size());
    if (bytes > 0) scratch_ = AlignedBuffer(static_cast<std::int64_t>(bytes / sizeof(float) + 1));
    for (auto& p : prims_)
      if (p->scratch_md.get_size() > 0) p->arg(DNNL_ARG_SCRATCHPAD, memory(p->scratch_md, eng_, scratch_.data()));
    for (const auto& [node, what, prim] : pending_impl_) impls_.push_back({node, fmt::format("{}={}", what, prim->impl)});
  }

  OnednnKernels& k_;
  const dnnl::engine& eng_;
  NetGraph g_;
  NetOptions o_;
  std::int64_t n_;
  bool bf16_;
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

}  // namespace

std::unique_ptr<Net> OnednnKernels::make_net(const NetGraph& graph, const NetOptions& options) {
  try {
    return std::make_unique<OnednnNet>(*this, graph, options);
  } catch (const dnnl::error& e) {
    throw std::invalid_argument(fmt::format("oneDNN cannot build this network: {} (status {})", e.what(),
                                            static_cast<int>(e.status)));
  }
}

}  // namespace dlsweep::trainer::kernels
