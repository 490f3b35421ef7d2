// onednn_net.cpp — OnednnNet's plumbing: construction (forward compile, output, backward
// compile in reverse order), buffers and activation recycling, which tensors need gradients
// and how contributions are summed, the shared scratchpad, replay; and make_net.
// The per-layer primitives are in onednn_net_layers.cpp, the native bf16 pieces in
// onednn_net_bf16.cpp; the design is in onednn_net.hpp.
#include "trainer/kernels/onednn/onednn_net.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "trainer/kernels/onednn/onednn_isa.hpp"

namespace dlsweep::trainer::kernels {

namespace onednn_net {

OnednnNet::OnednnNet(OnednnKernels& k, const NetGraph& g, const NetOptions& o)
    : k_(k),
      eng_(k.engine()),
      g_(g),
      o_(o),
      n_(o.batch),
      native_(o.precision == Precision::bf16 && !o.emulate_bf16 && onednn_has_native_bf16()),
      bf16_(o.precision == Precision::bf16 && !native_),
      act_dt_(native_ ? dt::bf16 : dt::f32) {
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
    if (native_ && wants_grad_[0]) compile_input_grad_to_f32();
  }
  // Dense layers no gradient passes through (evaluation nets) run forward only.
  for (std::size_t i = 1; i < nodes.size(); ++i)
    if (nodes[i].op == Op::dense && !st_[i].dense) {
      if (native_) make_dense_bf16(static_cast<TensorId>(i), Rows{}, false);
      else make_dense(static_cast<TensorId>(i), MatrixView{}, false);
    }
  bind_scratchpad();
}

std::vector<std::string> OnednnNet::describe() const {
  std::vector<std::string> out;
  for (TensorId t = 0; t < static_cast<TensorId>(t_.size()); ++t) {
    std::string s = describe_node(g_, t);
    for (const auto& [node, text] : impls_)
      if (node == t) s += " | " + text;
    out.push_back(std::move(s));
  }
  return out;
}

void OnednnNet::run(const std::vector<Step>& steps, const LayerReadyFn& on_ready) {
  for (const Step& s : steps) {
    if (s.prim) k_.execute(s.prim->prim, s.prim->args);
    else if (s.fn) s.fn();
    else if (on_ready) on_ready(s.ready_tag);
  }
}

memory OnednnNet::alloc(const memory::desc& md) {
  buffers_.emplace_back(static_cast<std::int64_t>((md.get_size() + sizeof(float) - 1) / sizeof(float)));
  return memory(md, eng_, buffers_.back().data());
}

Prim* OnednnNet::new_prim(TensorId node, const char* what) {
  prims_.push_back(std::make_unique<Prim>());
  pending_impl_.push_back({node, what, prims_.back().get()});
  return prims_.back().get();
}

MatrixView OnednnNet::matrix_view(const memory& m, const Tensor& t) const {
  if (!t.matrix) throw std::logic_error("OnednnNet: tensor is not stored as a matrix");
  return MatrixView{static_cast<float*>(m.get_data_handle()), n_, t.shape.size(), t.ld};
}

void OnednnNet::plan_gradients() {
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

void OnednnNet::make_matrix_tensor(TensorId id) {
  Tensor& t = t_[static_cast<std::size_t>(id)];
  bool only_dense = true;
  for (const auto& nd : g_.nodes())
    for (TensorId in : nd.inputs)
      if (in == id && nd.op != Op::dense) only_dense = false;
  t.matrix = true;
  t.ld = only_dense ? padded_ld(t.shape.size()) : t.shape.size();
  t.md = rows_md(n_, t.shape, t.ld, tensor_dt(id));
  t.mem = activation(id, t.md);
}

void OnednnNet::set_output(TensorId id, const memory::desc& md) {
  Tensor& t = t_[static_cast<std::size_t>(id)];
  t.md = md;
  t.mem = activation(id, t.md);
}

memory OnednnNet::activation(TensorId id, const memory::desc& md) {
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

void OnednnNet::release_dead_inputs(TensorId id) {
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

void OnednnNet::ensure_diff(Tensor& t) {
  if (!t.dmem) t.dmem = alloc(t.md);
}

bool OnednnNet::modifies_diff_in_place(TensorId id) const {
  const NetNode& nd = g_.node(id);
  return (nd.op == Op::conv && nd.conv.act == Activation::relu) || (nd.op != Op::conv && nd.act == Activation::relu);
}

OnednnNet::Target OnednnNet::write_target(TensorId x, const memory::desc& md) {
  Tensor& t = t_[static_cast<std::size_t>(x)];
  if (g_.consumers(x) == 1 && md == t.md && !t.dmem) {
    ensure_diff(t);
    t.direct = true;
    return {t.dmem, false};
  }
  return {alloc(md), true};
}

void OnednnNet::contribute(TensorId x, const memory& src, bool exclusive) {
  t_[static_cast<std::size_t>(x)].pending.push_back({src, exclusive});
}

void OnednnNet::gather_diff(TensorId x) {
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

void OnednnNet::compile_output() {
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

void OnednnNet::bind_scratchpad() {
  std::size_t bytes = 0;
  for (const auto& p : prims_) bytes = std::max(bytes, p->scratch_md.get_size());
  if (bytes > 0) scratch_ = AlignedBuffer(static_cast<std::int64_t>(bytes / sizeof(float) + 1));
  for (auto& p : prims_)
    if (p->scratch_md.get_size() > 0) p->arg(DNNL_ARG_SCRATCHPAD, memory(p->scratch_md, eng_, scratch_.data()));
  for (const auto& [node, what, prim] : pending_impl_) impls_.push_back({node, fmt::format("{}={}", what, prim->impl)});
}

void OnednnNet::add_reorder(std::vector<Step>& list, TensorId node, const char* what, const memory& src,
                            const memory& dst) {
  dnnl::reorder::primitive_desc pd(eng_, src.get_desc(), eng_, dst.get_desc(), scratch_attr());
  Prim* p = new_prim(node, what);
  p->create<dnnl::reorder>(pd);
  p->arg(DNNL_ARG_FROM, src);
  p->arg(DNNL_ARG_TO, dst);
  list.push_back({p, {}, -1});
}

}  // namespace onednn_net

std::unique_ptr<Net> OnednnKernels::make_net(const NetGraph& graph, const NetOptions& options) {
  try {
    return std::make_unique<onednn_net::OnednnNet>(*this, graph, options);
  } catch (const dnnl::error& e) {
    throw std::invalid_argument(fmt::format("oneDNN cannot build this network: {} (status {})", e.what(),
                                            static_cast<int>(e.status)));
  }
}

}  // namespace dlsweep::trainer::kernels
