#include "trainer/kernels/net_graph.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace dlsweep::trainer::kernels {

namespace {

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("NetGraph: ") + what);
}

}  // namespace

TensorId NetGraph::push(NetNode n) {
  for (TensorId in : n.inputs) require(in >= 0 && in < static_cast<TensorId>(nodes_.size()), "unknown input tensor");
  nodes_.push_back(std::move(n));
  return static_cast<TensorId>(nodes_.size()) - 1;
}

const NetNode& NetGraph::node(TensorId t) const {
  require(t >= 0 && t < static_cast<TensorId>(nodes_.size()), "unknown tensor");
  return nodes_[static_cast<std::size_t>(t)];
}

int NetGraph::consumers(TensorId t) const {
  int n = 0;
  for (const auto& node : nodes_)
    for (TensorId in : node.inputs) n += in == t;
  return n;
}

TensorId NetGraph::input(Shape s) {
  require(nodes_.empty(), "the input must be the first node");
  require(s.c > 0 && s.h > 0 && s.w > 0, "empty input shape");
  NetNode n;
  n.op = NetNode::Op::input;
  n.shape = s;
  return push(std::move(n));
}

TensorId NetGraph::dense(TensorId x, std::int64_t out, Activation act, const DenseParams& p, int tag) {
  const Shape in = node(x).shape;
  require(out > 0, "dense layer without outputs");
  require(p.w.rows == in.size() && p.w.cols == out && p.b, "dense weights must be [in, out] with a bias");
  NetNode n;
  n.op = NetNode::Op::dense;
  n.inputs = {x};
  n.shape = {out, 1, 1};
  n.act = act;
  n.dense_params = p;
  n.tag = tag;
  return push(std::move(n));
}

TensorId NetGraph::conv(TensorId x, const ConvSpec& spec, const ConvParams& p, int tag) {
  const Shape in = node(x).shape;
  require(spec.out_channels > 0 && spec.kernel > 0 && spec.stride > 0 && spec.pad >= 0, "bad convolution spec");
  require(p.w.rows == spec.out_channels && p.w.cols == in.c * spec.kernel * spec.kernel,
          "convolution weights must be [out, in*k*k]");
  const std::int64_t oh = window_out(in.h, spec.kernel, spec.stride, spec.pad),
                     ow = window_out(in.w, spec.kernel, spec.stride, spec.pad);
  require(oh > 0 && ow > 0, "convolution window larger than the padded input");
  NetNode n;
  n.op = NetNode::Op::conv;
  n.inputs = {x};
  n.shape = {spec.out_channels, oh, ow};
  n.conv = spec;
  n.conv_params = p;
  n.tag = tag;
  return push(std::move(n));
}

TensorId NetGraph::pool(TensorId x, const PoolSpec& spec) {
  const Shape in = node(x).shape;
  NetNode n;
  n.op = NetNode::Op::pool;
  n.inputs = {x};
  n.pool = spec;
  if (spec.kind == PoolSpec::Kind::global_avg) {
    n.shape = {in.c, 1, 1};
  } else {
    require(spec.kernel > 0 && spec.stride > 0 && spec.pad >= 0 && spec.pad < spec.kernel, "bad pooling spec");
    n.shape = {in.c, window_out(in.h, spec.kernel, spec.stride, spec.pad),
               window_out(in.w, spec.kernel, spec.stride, spec.pad)};
    require(n.shape.h > 0 && n.shape.w > 0, "pooling window larger than the padded input");
  }
  return push(std::move(n));
}

TensorId NetGraph::batch_norm(TensorId x, const BatchNormSpec& spec, const BatchNormParams& p, int tag) {
  require(p.scale && p.shift && p.running_mean && p.running_var, "batch norm needs scale, shift and running stats");
  require(spec.eps > 0 && spec.momentum >= 0 && spec.momentum <= 1, "bad batch norm spec");
  NetNode n;
  n.op = NetNode::Op::batch_norm;
  n.inputs = {x};
  n.shape = node(x).shape;
  n.bn = spec;
  n.bn_params = p;
  n.tag = tag;
  return push(std::move(n));
}

TensorId NetGraph::relu(TensorId x) {
  NetNode n;
  n.op = NetNode::Op::relu;
  n.inputs = {x};
  n.shape = node(x).shape;
  return push(std::move(n));
}

TensorId NetGraph::add(TensorId a, TensorId b, Activation act) {
  require(node(a).shape == node(b).shape, "add of tensors of different shapes");
  require(a != b, "add of a tensor to itself");
  NetNode n;
  n.op = NetNode::Op::add;
  n.inputs = {a, b};
  n.shape = node(a).shape;
  n.act = act;
  return push(std::move(n));
}

std::string describe_node(const NetGraph& g, TensorId t) {
  const NetNode& n = g.node(t);
  const std::string shape = fmt::format("[{},{},{}]", n.shape.c, n.shape.h, n.shape.w);
  const char* act = n.act == Activation::relu ? " relu" : "";
  switch (n.op) {
    case NetNode::Op::input: return "input " + shape;
    case NetNode::Op::dense:
      return fmt::format("dense {}->{}{} {}", g.node(n.inputs[0]).shape.size(), n.shape.c, act, shape);
    case NetNode::Op::conv:
      return fmt::format("conv {}x{}/{} pad {} {}->{}{}{} {}", n.conv.kernel, n.conv.kernel, n.conv.stride, n.conv.pad,
                         g.node(n.inputs[0]).shape.c, n.shape.c, n.conv_params.b ? "" : " nobias",
                         n.conv.act == Activation::relu ? " relu" : "", shape);
    case NetNode::Op::pool:
      if (n.pool.kind == PoolSpec::Kind::global_avg) return "global_avg_pool " + shape;
      return fmt::format("max_pool {}x{}/{} pad {} {}", n.pool.kernel, n.pool.kernel, n.pool.stride, n.pool.pad, shape);
    case NetNode::Op::batch_norm: return fmt::format("batch_norm{} {}", n.bn.relu ? " relu" : "", shape);
    case NetNode::Op::relu: return "relu " + shape;
    case NetNode::Op::add: return fmt::format("add{} {}", act, shape);
  }
  return "?";
}

}  // namespace dlsweep::trainer::kernels
