// onednn_net_bf16.cpp — OnednnNet's native bf16 pieces (design in onednn_net.hpp): which
// tensors are bf16, the fp32 <-> bf16 conversions at the caller's buffers (input, input
// gradient; the logits stay fp32), and the dense layers on onednn_dense_bf16.hpp's kernel.
// Convolutions, pooling, batch norm, ReLU and adds take their element type from their input
// tensors (act_dt_) in onednn_net_layers.cpp.
#include "trainer/kernels/onednn/onednn_net.hpp"

namespace dlsweep::trainer::kernels::onednn_net {

dt OnednnNet::tensor_dt(TensorId id) const {
  if (!native_) return dt::f32;
  const bool dense_output = id == static_cast<TensorId>(g_.nodes().size()) - 1 && g_.node(id).op == Op::dense;
  return dense_output ? dt::f32 : dt::bf16;
}

void OnednnNet::compile_input_to_bf16() {
  const Tensor& x = t_[0];
  const memory in32 = alloc(rows_md(n_, x.shape, x.ld));
  add_reorder(fwd_, 0, "input_to_bf16", in32, x.mem);
  in32_ = MatrixView{static_cast<float*>(in32.get_data_handle()), n_, x.shape.size(), x.ld};
}

void OnednnNet::compile_input_grad_to_f32() {
  const Tensor& x = t_[0];
  const memory dx32 = alloc(rows_md(n_, x.shape, x.ld));
  add_reorder(bwd_, 0, "input_grad_to_f32", x.dmem, dx32);
  in_grad32_ = MatrixView{static_cast<float*>(dx32.get_data_handle()), n_, x.shape.size(), x.ld};
}

void OnednnNet::compile_dense_forward_bf16(TensorId id) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
  s.dense_x16 = Rows{x.mem.get_data_handle(), x.ld};
  if (!x.matrix) {
    const std::int64_t ld = padded_ld(x.shape.size());
    s.flat = alloc(rows_md(n_, x.shape, ld, dt::bf16));
    add_reorder(fwd_, id, "flatten", x.mem, s.flat);
    s.dense_x16 = Rows{s.flat.get_data_handle(), ld};
  }
  // The kernel (which converts the weights each forward) is built once its backward targets
  // are known (compile_dense_backward).
  fwd_.push_back({nullptr, [&s] { s.dense->forward(); }, -1});
}

void OnednnNet::make_dense_bf16(TensorId id, Rows dx, bool trainable) {
  const NetNode& nd = g_.node(id);
  NodeState& s = st_[static_cast<std::size_t>(id)];
  const Tensor& y = t_[static_cast<std::size_t>(id)];
  const Tensor& x = t_[static_cast<std::size_t>(nd.inputs[0])];
  DenseBf16Binding b;
  b.n = n_;
  b.in = x.shape.size();
  b.out = y.shape.size();
  b.x = s.dense_x16;
  b.y = Rows{y.mem.get_data_handle(), y.ld};
  b.y_f32 = tensor_dt(id) == dt::f32;
  b.w = nd.dense_params.w;
  b.b = nd.dense_params.b;
  if (trainable) {
    b.dy = Rows{y.dmem.get_data_handle(), y.ld};
    b.dw = nd.dense_params.dw;
    b.db = nd.dense_params.db;
    b.dx = dx;
  }
  s.dense = kernels::make_dense_bf16(k_, nd.act, b);
  impls_.push_back({id, s.dense->describe()});
}

}  // namespace dlsweep::trainer::kernels::onednn_net
