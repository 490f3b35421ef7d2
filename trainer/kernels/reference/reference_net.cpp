// reference_net.cpp — ReferenceKernels::make_net: a NetGraph run node by node with the plain
// loops of reference_math.hpp / reference_layers.hpp, in float. Every tensor is a padded
// row-major matrix [n, c·h·w] (NCHW rows); backward zeroes the gradient of every tensor,
// then each node ADDS its contributions to its inputs' gradients, so tensors read by several
// nodes get the sum without special cases. Slow by design; it is the yardstick.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainer/kernels/net.hpp"
#include "trainer/kernels/reference/reference_kernels.hpp"
#include "trainer/kernels/reference/reference_layers.hpp"

namespace dlsweep::trainer::kernels {

namespace {

using Op = NetNode::Op;

struct RefTensor {
  AlignedBuffer value, diff;
  MatrixView v, d;  ///< d empty when no gradient flows into this tensor
};

struct RefLayer {
  std::vector<std::int32_t> argmax;  ///< max pooling
  std::vector<float> mean, var;      ///< batch norm: statistics of the last training forward
  AlignedBuffer weights;             ///< bf16: the rounded copy of w the layer computes with
  MatrixView w;                      ///< the weights in use (params or the rounded copy)
};

class ReferenceNet final : public Net {
 public:
  ReferenceNet(const NetGraph& g, const NetOptions& o) : g_(g), o_(o), n_(o.batch) {
    if (n_ < 1) throw std::invalid_argument("ReferenceNet: batch size must be positive");
    const auto nodes = g_.nodes();
    const std::size_t count = nodes.size();
    if (count == 0 || nodes[0].op != Op::input) throw std::invalid_argument("ReferenceNet: graph without input");
    for (TensorId t = 0; t + 1 < static_cast<TensorId>(count); ++t)
      if (g_.consumers(t) == 0) throw std::invalid_argument("ReferenceNet: a node's output is never used: " + describe_node(g_, t));
    tensors_.resize(count);
    layers_.resize(count);
    runs_backward_.assign(count, false);
    wants_grad_.assign(count, false);
    wants_grad_[0] = o.train && o.input_grad;
    for (std::size_t i = 1; i < count; ++i) {
      bool run = nodes[i].tag >= 0;
      for (TensorId in : nodes[i].inputs) run = run || wants_grad_[static_cast<std::size_t>(in)];
      runs_backward_[i] = o.train && run;
      wants_grad_[i] = runs_backward_[i];
    }
    std::int64_t max_size = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t size = nodes[i].shape.size();
      max_size = std::max(max_size, size);
      RefTensor& t = tensors_[i];
      t.value = make_matrix_buffer(n_, size);
      t.v = t.value.view(n_, size, padded_ld(size));
      if (wants_grad_[i] || (o.train && i + 1 == count)) {
        t.diff = make_matrix_buffer(n_, size);
        t.d = t.diff.view(n_, size, padded_ld(size));
      }
      const NetNode& nd = nodes[i];
      RefLayer& l = layers_[i];
      if (nd.op == Op::pool && nd.pool.kind == PoolSpec::Kind::max)
        l.argmax.resize(static_cast<std::size_t>(n_ * nd.shape.size()));
      if (nd.op == Op::batch_norm) {
        l.mean.resize(static_cast<std::size_t>(nd.shape.c));
        l.var.resize(static_cast<std::size_t>(nd.shape.c));
      }
      if (nd.op == Op::dense || nd.op == Op::conv) {
        const MatrixView w = nd.op == Op::dense ? nd.dense_params.w : nd.conv_params.w;
        l.w = w;
        if (o.precision == Precision::bf16) {
          l.weights = AlignedBuffer(w.span());
          l.w = l.weights.view(w.rows, w.cols, w.ld);
        }
      }
    }
    scratch_ = make_matrix_buffer(n_, max_size);
  }

  MatrixView input() override { return tensors_.front().v; }
  MatrixView output() override { return tensors_.back().v; }
  MatrixView output_grad() override {
    if (!o_.train) throw std::logic_error("ReferenceNet::output_grad on an evaluation net");
    return tensors_.back().d;
  }
  MatrixView input_grad() override {
    if (!wants_grad_[0]) throw std::logic_error("ReferenceNet::input_grad without NetOptions::input_grad");
    return tensors_.front().d;
  }

  void forward() override {
    const auto nodes = g_.nodes();
    const bool bf16 = o_.precision == Precision::bf16;
    if (bf16) round_rows(tensors_[0].v);
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      const NetNode& nd = nodes[i];
      RefLayer& l = layers_[i];
      const MatrixView y = tensors_[i].v;
      const auto x = [&](int k = 0) { return tensors_[static_cast<std::size_t>(nd.inputs[static_cast<std::size_t>(k)])].v; };
      const Shape in = g_.node(nd.inputs[0]).shape;
      switch (nd.op) {
        case Op::input: break;
        case Op::dense:
          refresh_weights(l, nd.dense_params.w);
          ref::dense_forward<float>(ref::mat(x()), ref::mat(l.w), nd.dense_params.b, nd.act, ref::mat(y));
          break;
        case Op::conv:
          refresh_weights(l, nd.conv_params.w);
          ref::conv_forward<float>(ref::mat(x()), in, ref::mat(l.w), nd.conv_params.b, nd.conv, ref::mat(y), nd.shape);
          break;
        case Op::pool:
          if (nd.pool.kind == PoolSpec::Kind::max)
            ref::max_pool_forward<float>(ref::mat(x()), in, nd.pool, ref::mat(y), nd.shape, l.argmax.data());
          else
            ref::global_avg_pool_forward<float>(ref::mat(x()), in, ref::mat(y));
          break;
        case Op::batch_norm: {
          const BatchNormParams& p = nd.bn_params;
          if (o_.train) {
            ref::batch_norm_forward_training<float>(ref::mat(x()), in, p.scale, p.shift, nd.bn.eps, nd.bn.relu,
                                                    ref::mat(y), l.mean.data(), l.var.data());
            ref::update_running_stats(l.mean.data(), l.var.data(), in.c, n_ * in.h * in.w, nd.bn.momentum,
                                      p.running_mean, p.running_var);
          } else {
            ref::batch_norm_forward_inference<float>(ref::mat(x()), in, p.scale, p.shift, p.running_mean,
                                                     p.running_var, nd.bn.eps, nd.bn.relu, ref::mat(y));
          }
          break;
        }
        case Op::relu: ref::relu_forward<float>(ref::mat(x()), ref::mat(y)); break;
        case Op::add: ref::add_forward<float>(ref::mat(x(0)), ref::mat(x(1)), nd.act, ref::mat(y)); break;
      }
      if (bf16 && i + 1 < nodes.size()) round_rows(y);
    }
  }

  void backward(const LayerReadyFn& on_ready) override {
    if (!o_.train) throw std::logic_error("ReferenceNet::backward on an evaluation net");
    const auto nodes = g_.nodes();
    const bool bf16 = o_.precision == Precision::bf16;
    for (std::size_t i = 0; i + 1 < nodes.size(); ++i)
      if (!tensors_[i].d.empty()) std::fill(tensors_[i].diff.data(), tensors_[i].diff.data() + tensors_[i].d.span(), 0.0f);
    for (std::size_t i = nodes.size(); i-- > 1;) {
      if (!runs_backward_[i]) continue;
      const NetNode& nd = nodes[i];
      RefLayer& l = layers_[i];
      const MatrixView y = tensors_[i].v, dy = tensors_[i].d;
      if (bf16) round_rows(dy);
      const std::size_t in0 = static_cast<std::size_t>(nd.inputs[0]);
      const MatrixView x = tensors_[in0].v;
      const Shape in = nodes[in0].shape;
      const bool dx_wanted = wants_grad_[in0];
      const MatrixView tmp = scratch_.view(n_, in.size(), padded_ld(in.size()));
      switch (nd.op) {
        case Op::input: break;
        case Op::dense: {
          const DenseParams& p = nd.dense_params;
          ref::dense_backward<float>(ref::mat(x), ref::mat(l.w), ref::mat(y), nd.act, ref::mat(dy), ref::mat(p.dw),
                                     p.db, dx_wanted ? ref::mat(tmp) : ref::Mat<float>{});
          break;
        }
        case Op::conv: {
          const ConvParams& p = nd.conv_params;
          ref::conv_backward<float>(ref::mat(x), in, ref::mat(l.w), ref::mat(y), nd.conv, nd.shape, ref::mat(dy),
                                    ref::mat(p.dw), p.db, dx_wanted ? ref::mat(tmp) : ref::Mat<float>{});
          break;
        }
        case Op::pool:
          if (nd.pool.kind == PoolSpec::Kind::max)
            ref::max_pool_backward<float>(ref::mat(dy), in, nd.shape, l.argmax.data(), ref::mat(tmp));
          else
            ref::global_avg_pool_backward<float>(ref::mat(dy), in, ref::mat(tmp));
          break;
        case Op::batch_norm: {
          const BatchNormParams& p = nd.bn_params;
          ref::batch_norm_backward<float>(ref::mat(x), in, p.scale, l.mean.data(), l.var.data(), nd.bn.eps, nd.bn.relu,
                                          ref::mat(y), ref::mat(dy), ref::mat(tmp), p.dscale, p.dshift);
          break;
        }
        case Op::relu:
          ref::relu_mask<float>(ref::mat(y), ref::mat(dy));
          copy_rows(dy, tmp);
          break;
        case Op::add:
          if (nd.act == Activation::relu) ref::relu_mask<float>(ref::mat(y), ref::mat(dy));
          copy_rows(dy, tmp);
          if (const std::size_t in1 = static_cast<std::size_t>(nd.inputs[1]); wants_grad_[in1]) add_rows(dy, tensors_[in1].d);
          break;
      }
      if (dx_wanted) add_rows(tmp, tensors_[in0].d);
      if (nd.tag >= 0 && on_ready) on_ready(nd.tag);
    }
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> out;
    for (TensorId t = 0; t < static_cast<TensorId>(g_.nodes().size()); ++t)
      out.push_back(describe_node(g_, t) + ": reference");
    return out;
  }

 private:
  void refresh_weights(RefLayer& l, MatrixView w) {
    if (o_.precision != Precision::bf16) return;
    std::copy(w.data, w.data + w.span(), l.weights.data());
    round_rows(l.w);
  }
  static void round_rows(MatrixView m) {
    for (std::int64_t r = 0; r < m.rows; ++r) round_to_bf16(m.row(r), m.cols);
  }
  static void copy_rows(MatrixView from, MatrixView to) {
    for (std::int64_t r = 0; r < from.rows; ++r) std::copy(from.row(r), from.row(r) + from.cols, to.row(r));
  }
  static void add_rows(MatrixView from, MatrixView to) {
    for (std::int64_t r = 0; r < from.rows; ++r)
      for (std::int64_t c = 0; c < from.cols; ++c) to.at(r, c) += from.at(r, c);
  }

  NetGraph g_;  // a copy: the net outlives nothing it does not own
  NetOptions o_;
  std::int64_t n_;
  std::vector<RefTensor> tensors_;
  std::vector<RefLayer> layers_;
  std::vector<bool> runs_backward_, wants_grad_;
  AlignedBuffer scratch_;  ///< one node's input-gradient contribution
};

}  // namespace

std::unique_ptr<Net> ReferenceKernels::make_net(const NetGraph& graph, const NetOptions& options) {
  return std::make_unique<ReferenceNet>(graph, options);
}

}  // namespace dlsweep::trainer::kernels
