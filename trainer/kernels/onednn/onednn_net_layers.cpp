// onednn_net_layers.cpp — OnednnNet's per-layer compile steps: for each node kind the
// forward primitive(s) (compile_*_forward) and the backward ones (compile_*_backward), with
// the reorders, fusions and gradient targets described in onednn_net.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "trainer/kernels/onednn/max_pool_blocked.hpp"
#include "trainer/kernels/onednn/onednn_net.hpp"
#include "trainer/kernels/reference/reference_layers.hpp"

namespace dlsweep::trainer::kernels::onednn_net {

namespace {
// The channel block of `md` when it is one of the plain blocked f32 layouts the custom 2x2
// pooling handles (nChw8c from AVX2 convolutions, nChw16c from AVX-512/AMX ones); 0 for any
// other layout, which then goes to oneDNN's pooling. bf16 tensors (native bf16 nets) always
// do: on AVX512-BF16 oneDNN's bf16 pooling plus a separate ReLU backward beat a bf16 form of
// the custom one (measured, batch 1024, 32x28x28 nChw16c, 2 threads: 6.7 + 3.7 + ~6 ms
// against 10.6 + 14.4 ms forward + backward).
std::int64_t blocked_lanes(const memory::desc& md, std::int64_t n, const Shape& shape) {
  if (md == memory::desc(dims4(n, shape), dt::f32, tag::nChw8c)) return 8;
  if (md == memory::desc(dims4(n, shape), dt::f32, tag::nChw16c)) return 16;
  return 0;
}

// A name for the layouts a pooling input can arrive in, for describe(): which path ran and why.
std::string layout_name(const memory::desc& md, std::int64_t n, const Shape& shape) {
  for (auto [t, name] : {std::pair{tag::nchw, "nchw"}, {tag::nhwc, "nhwc"}, {tag::nChw4c, "nChw4c"},
                         {tag::nChw8c, "nChw8c"}, {tag::nChw16c, "nChw16c"}})
    if (md == memory::desc(dims4(n, shape), md.data_type(), t)) return name;
  return "other";
}
}  // namespace

void OnednnNet::compile_forward(TensorId id) {
  const NetNode& nd = g_.node(id);
  Tensor& y = t_[static_cast<std::size_t>(id)];
  y.shape = nd.shape;
  const auto prop = o_.train ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  switch (nd.op) {
    case Op::input:
      make_matrix_tensor(id);
      if (native_) compile_input_to_bf16();
      return;
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

void OnednnNet::compile_dense_forward(TensorId id) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
  make_matrix_tensor(id);
  if (native_) {
    compile_dense_forward_bf16(id);
    return;
  }
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

void OnednnNet::make_dense(TensorId id, MatrixView dx, bool trainable) {
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

void OnednnNet::compile_conv_forward(TensorId id, dnnl::prop_kind prop) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
  const ConvSpec& c = nd.conv;
  const std::int64_t k = c.kernel;
  auto any = [&](memory::dims d) { return memory::desc(d, act_dt_, tag::any); };
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

void OnednnNet::compile_pool_forward(TensorId id, dnnl::prop_kind prop) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
  const PoolSpec& ps = nd.pool;
  const bool global = ps.kind == PoolSpec::Kind::global_avg;
  const std::int64_t lanes = global ? 0 : blocked_lanes(x.md, n_, x.shape);
  if (!global && ps.kernel == 2 && ps.stride == 2 && ps.pad == 0 && lanes != 0) {
    s.custom_pool = lanes;
    const tag out_tag = lanes == 16 ? tag::nChw16c : tag::nChw8c;
    set_output(id, memory::desc(dims4(n_, nd.shape), dt::f32, out_tag));
    const std::int64_t cb = (x.shape.c + lanes - 1) / lanes, bytes = n_ * cb * nd.shape.h * nd.shape.w * lanes;
    buffers_.emplace_back((bytes + 3) / 4);
    s.pool_ws = reinterpret_cast<std::uint8_t*>(buffers_.back().data());
    fwd_.push_back({nullptr,
                    [xm = x.mem, ym = t_[static_cast<std::size_t>(id)].mem, n = n_, cb, h = x.shape.h, w = x.shape.w,
                     ws = s.pool_ws, lanes] {
                      max_pool2x2_blocked_forward(lanes, static_cast<const float*>(xm.get_data_handle()), n, cb, h, w,
                                                  static_cast<float*>(ym.get_data_handle()), ws);
                    },
                    -1});
    impls_.push_back({id, fmt::format("fwd=custom:nChw{}c_2x2", lanes)});
    return;
  }
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
      dnnl::pooling_forward::desc(prop, alg, x.md, memory::desc(dims4(n_, nd.shape), act_dt_, tag::any), stride,
                                  kernel, pad_l, pad_r),
      scratch_attr(), eng_);
  s.pool_pd = pd;
  s.pool_alg = alg;
  s.pool_stride = stride;
  s.pool_kernel = kernel;
  s.pool_pad_l = pad_l;
  s.pool_pad_r = pad_r;
  set_output(id, pd.dst_desc());
  impls_.push_back({id, "pool_src=" + layout_name(x.md, n_, x.shape)});
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

dnnl::normalization_flags OnednnNet::bn_flags(const NetNode& nd) const {
  auto f = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  if (nd.bn.relu) f = f | dnnl::normalization_flags::fuse_norm_relu;
  if (!o_.train) f = f | dnnl::normalization_flags::use_global_stats;
  return f;
}

void OnednnNet::compile_bn_forward(TensorId id, dnnl::prop_kind prop) {
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

void OnednnNet::compile_backward(TensorId id) {
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

void OnednnNet::relu_backward_in_place(TensorId id) {
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

void OnednnNet::compile_dense_backward(TensorId id) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  const TensorId xi = nd.inputs[0];
  const Tensor& x = t_[static_cast<std::size_t>(xi)];
  MatrixView dx;
  Rows dx16;
  std::optional<Target> to;
  if (wants_grad_[static_cast<std::size_t>(xi)]) {
    const memory::desc rows = x.matrix ? x.md : s.flat.get_desc();
    to = write_target(xi, rows);
    const std::int64_t ld = x.matrix ? x.ld : padded_ld(x.shape.size());
    if (native_) dx16 = Rows{to->mem.get_data_handle(), ld};
    else dx = MatrixView{static_cast<float*>(to->mem.get_data_handle()), n_, x.shape.size(), ld};
  }
  if (native_) make_dense_bf16(id, dx16, true);
  else make_dense(id, dx, true);
  // The kernel runs relu backward, db, dw, then dx; dw/db are final before dx, but the
  // kernel runs them as one unit, so the layer is reported after it.
  bwd_.push_back({nullptr, [&s] { s.dense->backward(); }, -1});
  if (to && to->then_contribute) contribute(xi, to->mem);
}

void OnednnNet::compile_conv_backward(TensorId id) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  Tensor& y = t_[static_cast<std::size_t>(id)];
  const TensorId xi = nd.inputs[0];
  const Tensor& x = t_[static_cast<std::size_t>(xi)];
  const ConvSpec& c = nd.conv;
  // A ReLU whose only reader is the backend's 2x2 max pooling is undone there (see
  // pool_masks_relu); otherwise here.
  if (c.act == Activation::relu && !pool_masks_relu(id)) relu_backward_in_place(id);
  // Activations and their gradients in act_dt_ (bf16 when native); weight gradients fp32.
  auto any = [&](memory::dims d) { return memory::desc(d, act_dt_, tag::any); };
  auto any32 = [&](memory::dims d) { return memory::desc(d, dt::f32, tag::any); };
  const memory::dims wdims{c.out_channels, x.shape.c, c.kernel, c.kernel};
  const memory::dims stride{c.stride, c.stride}, pad{c.pad, c.pad};
  const bool bias = nd.conv_params.b != nullptr;
  const memory::desc bias_md({c.out_channels}, dt::f32, tag::x);

  // dW (and db) first: the layer's gradients are final before dX is computed.
  auto wd = bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)),
                                                           any32(wdims), bias_md, any(dims4(n_, y.shape)), stride, pad, pad)
                 : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, any(dims4(n_, x.shape)),
                                                           any32(wdims), any(dims4(n_, y.shape)), stride, pad, pad);
  dnnl::convolution_backward_weights::primitive_desc wpd(wd, scratch_attr(), eng_, *s.conv_pd);
  // With very few input channels (a first layer on grey images) oneDNN 2.6 picks a blocked
  // source padded to 8 channels and spends 8x the work; channels-last is 5x faster there
  // (measured on AVX2 for 1->32 5x5 at batch 256: 24 ms vs 4.9 ms, plus a 3 ms reorder of dy).
  if (wpd.src_desc().data.padded_dims[1] > 2 * x.shape.c) {
    auto nhwc = [&](memory::dims d) { return memory::desc(d, act_dt_, tag::nhwc); };
    auto wd2 = bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, nhwc(dims4(n_, x.shape)),
                                                              any32(wdims), bias_md, nhwc(dims4(n_, y.shape)), stride, pad, pad)
                    : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, nhwc(dims4(n_, x.shape)),
                                                              any32(wdims), nhwc(dims4(n_, y.shape)), stride, pad, pad);
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

void OnednnNet::compile_pool_backward(TensorId id) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  Tensor& y = t_[static_cast<std::size_t>(id)];
  const TensorId xi = nd.inputs[0];
  const Tensor& x = t_[static_cast<std::size_t>(xi)];
  if (s.custom_pool) {
    Target to = write_target(xi, x.md);
    const std::int64_t lanes = s.custom_pool, cb = (x.shape.c + lanes - 1) / lanes;
    const float* mask = pool_masks_relu(xi) ? static_cast<const float*>(y.mem.get_data_handle()) : nullptr;
    bwd_.push_back({nullptr,
                    [dy = y.dmem, dx = to.mem, n = n_, cb, h = x.shape.h, w = x.shape.w, ws = s.pool_ws, mask, lanes] {
                      max_pool2x2_blocked_backward(lanes, static_cast<const float*>(dy.get_data_handle()), ws, mask, n,
                                                   cb, h, w, static_cast<float*>(dx.get_data_handle()));
                    },
                    -1});
    impls_.push_back({id, fmt::format("bwd=custom:nChw{}c_2x2{}", lanes, mask ? "+relu_bwd" : "")});
    if (to.then_contribute) contribute(xi, to.mem);
    return;
  }
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

void OnednnNet::compile_bn_backward(TensorId id) {
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

bool OnednnNet::pool_masks_relu(TensorId conv) const {
  const NetNode& nd = g_.node(conv);
  if (nd.op != Op::conv || nd.conv.act != Activation::relu || g_.consumers(conv) != 1) return false;
  for (TensorId j = conv + 1; j < static_cast<TensorId>(t_.size()); ++j)
    if (g_.node(j).inputs[0] == conv) return g_.node(j).op == Op::pool && st_[static_cast<std::size_t>(j)].custom_pool != 0;
  return false;
}

}  // namespace dlsweep::trainer::kernels::onednn_net
