// gpu_net_node.hpp — what every node of a GPU net (cuda_net, cuda_nhwc_net) reads off its
// NetGraph node alike: the op, inputs, layer tag, shapes and element count. Pure, no CUDA.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "trainer/kernels/net_graph.hpp"

namespace dlsweep::trainer::kernels::cuda {

struct GpuNodeHeader {
  NetNode::Op op = NetNode::Op::input;
  std::vector<int> in;
  int tag = -1;
  Shape in_shape, shape;
  std::int64_t count = 0;  ///< elements of the output (n · shape.size())
  Activation act = Activation::none;

  /// Node t of `nodes` at batch n (t >= 1: it has an input).
  void set(std::span<const NetNode> nodes, std::size_t t, std::int64_t n) {
    const NetNode& nd = nodes[t];
    op = nd.op;
    in.assign(nd.inputs.begin(), nd.inputs.end());
    tag = nd.tag;
    shape = nd.shape;
    in_shape = nodes[static_cast<std::size_t>(in.at(0))].shape;
    count = n * nd.shape.size();
    act = nd.act;
  }
};

/// True when tensor `t` is an input of more than one node (its gradient is a sum).
inline bool read_by_several(std::span<const NetNode> nodes, int t) {
  return std::count_if(nodes.begin(), nodes.end(), [&](const NetNode& o) {
           return std::find(o.inputs.begin(), o.inputs.end(), t) != o.inputs.end();
         }) > 1;
}

}  // namespace dlsweep::trainer::kernels::cuda
