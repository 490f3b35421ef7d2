#include "trainer/kernels/cuda/cuda_nhwc_net.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <stdexcept>

#include <cudnn.h>
#include <fmt/format.h>

#include "trainer/kernels/cuda/cuda_memory.hpp"
#include "trainer/kernels/cuda/cudnn_conv.hpp"
#include "trainer/kernels/cuda/gpu_net_node.hpp"
#include "trainer/kernels/cuda/lt_gemm.hpp"
#include "trainer/kernels/cuda/nhwc_layout.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {

cudnnDataType_t dnn_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::f32: break;
  }
  return CUDNN_DATA_FLOAT;
}

cudaDataType_t blas_type(DType t) {
  switch (t) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    case DType::f32: break;
  }
  return CUDA_R_32F;
}

const char* type_name(DType t, bool tf32) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::f32: break;
  }
  return tf32 ? "tf32" : "fp32";
}

cudnnTensorDescriptor_t nhwc_desc(std::int64_t n, const Shape& s, DType t) {
  return tensor_desc(n, s, CUDNN_TENSOR_NHWC, dnn_type(t));
}

void ck(cudaError_t e, const char* what) { check(e, what); }

}  // namespace

DType storage_type(Precision p) {
  switch (p) {
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
    case Precision::fp32:
    case Precision::tf32: break;
  }
  return DType::f32;
}

struct CudaNhwcNet::Node : GpuNodeHeader {
  std::int64_t rows = 0;      ///< n·h·w of the output (channel-last rows)
  std::int64_t in_rows = 0;   ///< n·h·w of the input
  // dense
  DenseParams dense;
  std::unique_ptr<LtGemm> fwd, bwd_w, bwd_x;
  void* w_t = nullptr;        ///< the weights in the storage type, rows in NHWC order
  float* dw_nhwc = nullptr;   ///< fp32 weight gradient in NHWC row order (spatial inputs only)
  // conv
  ConvParams conv_p;
  std::int64_t k = 0, rs = 0;
  void *wf = nullptr, *dwf = nullptr;  ///< KRSC filter and its gradient, storage type
  NodeDescs d;  ///< convolution descriptors and algorithms
  // pool
  bool global = false;
  PoolGeom geom;
  // batch norm
  BatchNormParams bn_p;
  BatchNormSpec bn;
  float *mean = nullptr, *inv = nullptr;
};

void* CudaNhwcNet::alloc_bytes(std::size_t bytes) {
  void* p = nullptr;
  bytes = std::max<std::size_t>(bytes, 16);
  ck(cudaMalloc(&p, bytes), "cudaMalloc (nhwc net)");
  owned_.push_back(p);
  ck(cudaMemsetAsync(p, 0, bytes, h_.stream), "cudaMemsetAsync");
  return p;
}

void CudaNhwcNet::zero_grad(void* p, std::int64_t count) {
  ck(cudaMemsetAsync(p, 0, static_cast<std::size_t>(count) * esize_, h_.stream), "zero gradient");
}

CudaNhwcNet::CudaNhwcNet(const CudaHandles& h, const NetGraph& graph, const NetOptions& options, NetInputs* inputs)
    : h_(h), options_(options), t_(storage_type(options.precision)), inputs_(inputs) {
  esize_ = t_ == DType::f32 ? 4 : 2;
  const auto gn = graph.nodes();
  if (gn.empty() || gn[0].op != NetNode::Op::input) throw std::invalid_argument("cuda backend: the graph has no input");
  const std::int64_t n = options.batch;
  const bool train = options.train;
  const bool tf32 = options.precision == Precision::tf32;
  const char* tn = type_name(t_, tf32);

  act_.resize(gn.size());
  grad_.resize(gn.size());
  written_.assign(gn.size(), 0);
  for (std::size_t t = 0; t < gn.size(); ++t) {
    const std::int64_t count = n * gn[t].shape.size();
    act_[t] = alloc_bytes(static_cast<std::size_t>(count) * esize_);
    if (train && (t > 0 || options.input_grad)) grad_[t] = alloc_bytes(static_cast<std::size_t>(count) * esize_);
  }
  const std::int64_t in_size = gn[0].shape.size(), out_size = gn.back().shape.size();
  {
    float* host = nullptr;
    ck(cudaMallocHost(reinterpret_cast<void**>(&host), static_cast<std::size_t>(n * in_size) * sizeof(float)),
       "cudaMallocHost (input)");
    std::fill(host, host + n * in_size, 0.0f);
    input_host_ = MatrixView{host, n, in_size, in_size};
  }
  in32_ = MatrixView{alloc_floats(n * in_size), n, in_size, in_size};
  out32_ = MatrixView{alloc_floats(n * out_size), n, out_size, out_size};
  if (train) dout32_ = MatrixView{alloc_floats(n * out_size), n, out_size, out_size};
  if (train && options.input_grad) din32_ = MatrixView{alloc_floats(n * in_size), n, in_size, in_size};
  describe_.push_back(fmt::format("input [{}x{}x{}] fp32 NCHW -> {} NHWC on the GPU", gn[0].shape.c, gn[0].shape.h,
                                  gn[0].shape.w, tn));

  constexpr std::size_t kGemmWorkspace = std::size_t{32} << 20;
  std::size_t ws = kGemmWorkspace;
  std::size_t scratch = 0;
  std::int64_t max_c = 1;
  nodes_.push_back(std::make_unique<Node>());
  nodes_[0]->shape = gn[0].shape;
  // cuBLASLt shares the workspace with cuDNN (one stream: never at the same time); allocated
  // below once its size is known, so the GEMMs are given its final pointer after the loop.
  std::vector<std::pair<Node*, LtGemmSpec>> gemms_fwd, gemms_bw, gemms_bx;
  for (std::size_t t = 1; t < gn.size(); ++t) {
    const NetNode& nd = gn[t];
    auto node = std::make_unique<Node>();
    Node& N = *node;
    N.set(gn, t, n);
    N.rows = n * nd.shape.h * nd.shape.w;
    N.in_rows = n * N.in_shape.h * N.in_shape.w;
    max_c = std::max(max_c, nd.shape.c);
    const int x = N.in[0];
    const bool want_dx = train && grad_[static_cast<std::size_t>(x)] != nullptr;
    switch (nd.op) {
      case NetNode::Op::dense: {
        if (train && read_by_several(gn, x))
          throw std::invalid_argument("cuda backend: a dense layer's input read by several nodes");
        N.dense = nd.dense_params;
        const std::int64_t fin = N.in_shape.size(), fout = nd.shape.size();
        N.w_t = alloc_bytes(static_cast<std::size_t>(fin * fout) * esize_);
        const bool spatial = dense_input_needs_permutation(N.in_shape.c, N.in_shape.h * N.in_shape.w);
        if (train && spatial) N.dw_nhwc = alloc_floats(fin * fout);
        const cudaDataType_t bt = blas_type(t_);
        // Column-major: yᵀ[out, n] = w'ᵀ[out, in] · xᵀ[in, n] (w' row-major [in, out] is
        // column-major [out, in]).
        gemms_fwd.push_back({&N, LtGemmSpec{false, false, fout, n, fin, fout, fin, fout, bt, bt, tf32}});
        if (train) {
          // dwᵀ[out, in] = dzᵀ[out, n] · x[n, in], fp32 out (the arena's stride, or packed).
          const std::int64_t ldd = spatial ? fout : nd.dense_params.dw.ld;
          gemms_bw.push_back({&N, LtGemmSpec{false, true, fout, fin, n, fout, fin, ldd, bt, CUDA_R_32F, tf32}});
          // dxᵀ[in, n] = w'[in, out] · dzᵀ[out, n].
          if (want_dx) gemms_bx.push_back({&N, LtGemmSpec{true, false, fin, n, fout, fout, fout, fin, bt, bt, tf32}});
        }
        scratch = std::max(scratch, reduce_scratch_doubles(n, fout));
        describe_.push_back(fmt::format("dense {}->{}{} cuBLASLt {}{}", fin, fout,
                                        nd.act == Activation::relu ? " relu" : "", tn,
                                        spatial ? " (weights row-permuted to NHWC)" : ""));
        break;
      }
      case NetNode::Op::conv: {
        N.conv_p = nd.conv_params;
        const auto& c = nd.conv;
        N.k = c.out_channels;
        N.rs = c.kernel * c.kernel;
        N.act = c.act;
        N.d.x = nhwc_desc(n, N.in_shape, t_);
        N.d.y = nhwc_desc(n, nd.shape, t_);
        N.d.w = filter_desc(c, N.in_shape.c, CUDNN_TENSOR_NHWC, dnn_type(t_));
        N.d.conv = conv_desc(c, t_ == DType::f32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH);
        const std::int64_t wcount = N.k * N.in_shape.c * N.rs;
        N.wf = alloc_bytes(static_cast<std::size_t>(wcount) * esize_);
        if (train) N.dwf = alloc_bytes(static_cast<std::size_t>(wcount) * esize_);
        N.d.algos = choose_conv_algos(h.dnn, N.d.x, N.d.w, N.d.conv, N.d.y, train, want_dx,
                                    options.deterministic ? AlgoRule::prefer_deterministic : AlgoRule::fastest);
        ws = std::max(ws, N.d.algos.workspace);
        scratch = std::max(scratch, reduce_scratch_doubles(N.rows, N.k));
        describe_.push_back(fmt::format("conv {}x{}/{} pad {} {}->{}{}{} cuDNN NHWC {} ({}{})", c.kernel, c.kernel,
                                        c.stride, c.pad, N.in_shape.c, c.out_channels, N.conv_p.b ? " bias" : "",
                                        c.act == Activation::relu ? " relu" : "", tn, N.d.algos.text(),
                                        N.d.algos.deterministic       ? ""
                                        : options.deterministic     ? "; not all deterministic: none offered"
                                                                    : "; deterministic: false"));
        break;
      }
      case NetNode::Op::pool: {
        if (nd.pool.kind == PoolSpec::Kind::max) {
          N.geom = PoolGeom{n, N.in_shape.c, N.in_shape.h, N.in_shape.w, nd.shape.h, nd.shape.w,
                            nd.pool.kernel, nd.pool.stride, nd.pool.pad};
          describe_.push_back(fmt::format("max pool {}x{}/{} NHWC {}", nd.pool.kernel, nd.pool.kernel, nd.pool.stride, tn));
        } else {
          N.global = true;
          describe_.push_back(fmt::format("global average pool NHWC {}", tn));
        }
        break;
      }
      case NetNode::Op::batch_norm: {
        N.bn_p = nd.bn_params;
        N.bn = nd.bn;
        N.mean = alloc_floats(nd.shape.c);
        N.inv = alloc_floats(nd.shape.c);
        scratch = std::max(scratch, reduce_scratch_doubles(N.rows, nd.shape.c));
        describe_.push_back(fmt::format("batch norm {}{} NHWC {} (deterministic statistics)", nd.shape.c,
                                        N.bn.relu ? " relu" : "", tn));
        break;
      }
      case NetNode::Op::relu: describe_.push_back("relu"); break;
      case NetNode::Op::add: describe_.push_back(nd.act == Activation::relu ? "add relu" : "add"); break;
      case NetNode::Op::input: throw std::invalid_argument("cuda backend: a second input node");
    }
    nodes_.push_back(std::move(node));
  }
  workspace_bytes_ = ws;
  workspace_ = alloc_bytes(workspace_bytes_);
  reduce_scratch_ = static_cast<double*>(alloc_bytes(std::max<std::size_t>(scratch, 2) * sizeof(double)));
  sum1_ = static_cast<double*>(alloc_bytes(static_cast<std::size_t>(max_c) * sizeof(double)));
  sum2_ = static_cast<double*>(alloc_bytes(static_cast<std::size_t>(max_c) * sizeof(double)));
  auto make = [&](std::vector<std::pair<Node*, LtGemmSpec>>& list, std::unique_ptr<LtGemm> Node::*slot,
                  const char* name) {
    for (auto& [node, spec] : list) {
      auto g = LtGemm::create(h.lt, spec, workspace_, kGemmWorkspace, name);
      if (!g) throw std::runtime_error(g.error().what);
      node->*slot = std::move(*g);
    }
  };
  make(gemms_fwd, &Node::fwd, "dense forward");
  make(gemms_bw, &Node::bwd_w, "dense weight gradient");
  make(gemms_bx, &Node::bwd_x, "dense input gradient");
  ck(cudaStreamSynchronize(h_.stream), "cudaStreamSynchronize");
  if (inputs_) inputs_->add(input_host_.data, this);
  if (const char* p = std::getenv("DLSWEEP_CUDA_PROFILE"); p && std::string_view(p) == "1")
    prof_ = std::make_unique<NodeProfile>(nodes_.size() + 2);
}

CudaNhwcNet::NodeProfile::NodeProfile(std::size_t slots) : fwd(slots), bwd(slots), fwd_ms(slots), bwd_ms(slots) {
  for (auto* v : {&fwd, &bwd})
    for (auto& e : *v) cudaEventCreate(&e);
}

CudaNhwcNet::NodeProfile::~NodeProfile() {
  for (auto* v : {&fwd, &bwd})
    for (auto& e : *v) cudaEventDestroy(e);
}

void CudaNhwcNet::NodeProfile::collect(std::vector<cudaEvent_t>& ev, std::vector<double>& ms, double& count) {
  if (cudaEventSynchronize(ev.back()) != cudaSuccess) return;
  if (++seen <= kWarmup * 2) return;  // the first passes load kernels and warm cuDNN up: not timed
  for (std::size_t i = 1; i < ev.size(); ++i) {
    float m = 0;
    if (cudaEventElapsedTime(&m, ev[i - 1], ev[i]) == cudaSuccess) ms[i] += m;
  }
  (void)cudaGetLastError();  // a timing that failed must not surface as the next launch's error
  ++count;
}

CudaNhwcNet::~CudaNhwcNet() {
  if (prof_ && prof_->fwd_calls > 0) {
    // Per node: milliseconds per pass (forward / backward), in graph order; slot 1 is the input
    // conversion, the last the output's.
    const double fp = prof_->fwd_calls, bp = std::max(1.0, prof_->bwd_calls);
    double tf = 0, tb = 0;
    std::string table = fmt::format("cuda nhwc net profile, batch {}, {} forward and {} backward passes:\n",
                                    options_.batch, prof_->fwd_calls, prof_->bwd_calls);
    const std::size_t nn = nodes_.size();
    for (std::size_t i = 1; i < nn + 2; ++i) {
      const double f = prof_->fwd_ms[i] / fp;
      // backward slot j holds node nn − j + 1 (slot 1: the output gradient's conversion).
      const std::size_t node_b = i == 1 ? nn : nn - (i - 1);
      const double b = i <= nn ? prof_->bwd_ms[i] / bp : 0.0;
      tf += f, tb += b;
      const std::string what_f = i == 1 ? "input conversion" : i == nn + 1 ? "output conversion" : describe_[i - 1];
      const std::string what_b = i == 1 ? "output-gradient conversion" : node_b >= 1 && node_b < nn ? describe_[node_b] : "";
      table += fmt::format("  fwd {:8.3f} ms  {:<60}  bwd {:8.3f} ms  {}\n", f, what_f.substr(0, 60), b, what_b);
    }
    table += fmt::format("  total fwd {:.3f} ms, bwd {:.3f} ms\n", tf, tb);
    std::fputs(table.c_str(), stderr);
  }
  if (inputs_) inputs_->remove(input_host_.data);
  cudaStreamSynchronize(h_.stream);
  nodes_.clear();
  for (void* p : owned_) cudaFree(p);
  cudaFreeHost(input_host_.data);
}

void CudaNhwcNet::forward() {
  if (input_on_device_) input_on_device_ = false;
  else
    ck(cudaMemcpyAsync(in32_.data, input_host_.data, static_cast<std::size_t>(in32_.span()) * sizeof(float),
                       cudaMemcpyHostToDevice, h_.stream),
       "input upload");
  if (prof_) {
    forward_pass();  // eager, each node timed
    prof_->collect(prof_->fwd, prof_->fwd_ms, prof_->fwd_calls);
    return;
  }
  fwd_graph_.run(h_.stream, false, [this] { forward_pass(); });
}

void CudaNhwcNet::backward(const LayerReadyFn& on_ready) {
  if (!options_.train) throw std::logic_error("CudaNhwcNet::backward in evaluation mode");
  if (prof_) {
    backward_pass(on_ready);
    prof_->collect(prof_->bwd, prof_->bwd_ms, prof_->bwd_calls);
    return;
  }
  bwd_graph_.run(h_.stream, static_cast<bool>(on_ready), [&] { backward_pass(on_ready); });
}

void CudaNhwcNet::forward_pass() {
  const cudaStream_t s = h_.stream;
  const std::int64_t n = options_.batch;
  const float one = 1.0f, zero = 0.0f;
  const Shape& s0 = nodes_[0]->shape;
  if (prof_) cudaEventRecord(prof_->fwd[0], s);
  ck(to_nhwc(in32_.data, in32_.ld, act_[0], t_, n, s0.c, s0.h * s0.w, s), "input to NHWC");
  if (prof_) cudaEventRecord(prof_->fwd[1], s);
  for (std::size_t t = 1; t < nodes_.size(); ++t) {
    Node& N = *nodes_[t];
    void* y = act_[t];
    const void* x = act_[static_cast<std::size_t>(N.in[0])];
    switch (N.op) {
      case NetNode::Op::dense: {
        const std::int64_t hw = N.in_shape.h * N.in_shape.w;
        const bool perm = dense_input_needs_permutation(N.in_shape.c, hw);
        ck(rows_to_nhwc(N.dense.w.data, N.dense.w.ld, N.w_t, t_, perm ? N.in_shape.c : N.in_shape.size(), perm ? hw : 1,
                        N.shape.size(), s),
           "dense weights");
        if (auto st = N.fwd->run(N.w_t, x, y, 0.0f, s); !st) throw std::runtime_error(st.error().what);
        ck(bias_act(y, t_, N.dense.b, n, N.shape.size(), N.act == Activation::relu, s), "dense bias/relu");
        break;
      }
      case NetNode::Op::conv: {
        ck(to_nhwc(N.conv_p.w.data, N.conv_p.w.ld, N.wf, t_, N.k, N.in_shape.c, N.rs, s), "filter to KRSC");
        dnn(cudnnConvolutionForward(h_.dnn, &one, N.d.x, x, N.d.w, N.wf, N.d.conv, N.d.algos.fwd, workspace_,
                                    workspace_bytes_, &zero, N.d.y, y),
            "convolution forward");
        ck(bias_act(y, t_, N.conv_p.b, N.rows, N.shape.c, N.act == Activation::relu, s), "conv bias/relu");
        break;
      }
      case NetNode::Op::pool:
        if (N.global) ck(gap_fwd(x, y, t_, n, N.in_shape.c, N.in_shape.h * N.in_shape.w, s), "global average pool");
        else ck(maxpool_fwd(x, y, t_, N.geom, s), "max pool");
        break;
      case NetNode::Op::batch_norm: {
        const std::int64_t c = N.shape.c;
        if (options_.train) {
          ReduceArgs a;
          a.mode = ReduceMode::moments;
          a.a = const_cast<void*>(x);
          a.rows = N.rows;
          a.c = c;
          ck(channel_reduce(a, t_, reduce_scratch_, sum1_, sum2_, s), "batch norm statistics");
          ck(bn_finish_stats(sum1_, sum2_, c, N.rows, N.bn.eps, N.bn.momentum, N.mean, N.inv, N.bn_p.running_mean,
                             N.bn_p.running_var, s),
             "batch norm statistics");
        } else {
          ck(bn_eval_stats(N.bn_p.running_mean, N.bn_p.running_var, c, N.bn.eps, N.mean, N.inv, s),
             "batch norm statistics");
        }
        ck(bn_apply(x, y, t_, N.rows, c, N.mean, N.inv, N.bn_p.scale, N.bn_p.shift, N.bn.relu, s), "batch norm");
        break;
      }
      case NetNode::Op::relu: ck(relu_fwd(x, y, t_, N.count, s), "relu"); break;
      case NetNode::Op::add:
        ck(add_fwd(x, act_[static_cast<std::size_t>(N.in[1])], y, t_, N.count, N.act == Activation::relu, s), "add");
        break;
      case NetNode::Op::input: break;
    }
    if (prof_) cudaEventRecord(prof_->fwd[t + 1], s);
  }
  ck(from_nhwc(act_.back(), t_, out32_.data, out32_.ld, n, out32_.cols, 1, 0.0f, s), "output to fp32");
  if (prof_) cudaEventRecord(prof_->fwd[nodes_.size() + 1], s);
}

void CudaNhwcNet::backward_pass(const LayerReadyFn& on_ready) {
  const cudaStream_t s = h_.stream;
  const std::int64_t n = options_.batch;
  const float one = 1.0f, zero = 0.0f;
  std::fill(written_.begin(), written_.end(), 0);
  if (prof_) cudaEventRecord(prof_->bwd[0], s);
  ck(to_nhwc(dout32_.data, dout32_.ld, grad_.back(), t_, n, dout32_.cols, 1, s), "output gradient");
  if (prof_) cudaEventRecord(prof_->bwd[1], s);
  written_.back() = 1;
  auto beta_for = [&](int t) -> float {
    const float b = written_[static_cast<std::size_t>(t)] ? 1.0f : 0.0f;
    written_[static_cast<std::size_t>(t)] = 1;
    return b;
  };
  for (std::size_t t = nodes_.size(); t-- > 1;) {
    Node& N = *nodes_[t];
    void* g = grad_[t];
    const void* y = act_[t];
    const int xi = N.in[0];
    const void* x = act_[static_cast<std::size_t>(xi)];
    void* dx = grad_[static_cast<std::size_t>(xi)];
    if (!written_[t]) zero_grad(g, N.count);
    switch (N.op) {
      case NetNode::Op::dense: {
        const std::int64_t fout = N.shape.size();
        ReduceArgs a;
        a.mode = N.act == Activation::relu ? ReduceMode::masked_sum : ReduceMode::sum;
        a.a = g;
        a.y = y;
        a.rows = n;
        a.c = fout;
        ck(channel_reduce(a, t_, reduce_scratch_, sum1_, nullptr, s), "dense bias gradient");
        ck(store_sums(sum1_, N.dense.db, fout, s), "dense bias gradient");
        const std::int64_t hw = N.in_shape.h * N.in_shape.w;
        if (dense_input_needs_permutation(N.in_shape.c, hw)) {
          if (auto st = N.bwd_w->run(g, x, N.dw_nhwc, 0.0f, s); !st) throw std::runtime_error(st.error().what);
          ck(rows_from_nhwc(N.dw_nhwc, N.dense.dw.data, N.dense.dw.ld, N.in_shape.c, hw, fout, s), "dense dw");
        } else if (auto st = N.bwd_w->run(g, x, N.dense.dw.data, 0.0f, s); !st) {
          throw std::runtime_error(st.error().what);
        }
        if (dx) {
          beta_for(xi);  // dense inputs are read by this layer alone (checked at construction)
          if (auto st = N.bwd_x->run(N.w_t, g, dx, 0.0f, s); !st) throw std::runtime_error(st.error().what);
        }
        break;
      }
      case NetNode::Op::conv: {
        const bool relu = N.act == Activation::relu;
        if (N.conv_p.db) {
          ReduceArgs a;
          a.mode = relu ? ReduceMode::masked_sum : ReduceMode::sum;
          a.a = g;
          a.y = y;
          a.rows = N.rows;
          a.c = N.k;
          ck(channel_reduce(a, t_, reduce_scratch_, sum1_, nullptr, s), "conv bias gradient");
          ck(store_sums(sum1_, N.conv_p.db, N.k, s), "conv bias gradient");
        } else if (relu) {
          ck(relu_bwd(g, y, g, t_, N.count, 0.0f, s), "relu backward");
        }
        dnn(cudnnConvolutionBackwardFilter(h_.dnn, &one, N.d.x, x, N.d.y, g, N.d.conv, N.d.algos.bwd_filter,
                                           workspace_, workspace_bytes_, &zero, N.d.w, N.dwf),
            "convolution backward filter");
        ck(from_nhwc(N.dwf, t_, N.conv_p.dw.data, N.conv_p.dw.ld, N.k, N.in_shape.c, N.rs, 0.0f, s),
           "filter gradient to KCRS");
        if (dx) {
          const float b = beta_for(xi);
          dnn(cudnnConvolutionBackwardData(h_.dnn, &one, N.d.w, N.wf, N.d.y, g, N.d.conv, N.d.algos.bwd_data,
                                           workspace_, workspace_bytes_, &b, N.d.x, dx),
              "convolution backward data");
        }
        break;
      }
      case NetNode::Op::pool:
        if (!dx) break;
        if (N.global)
          ck(gap_bwd(g, dx, t_, n, N.in_shape.c, N.in_shape.h * N.in_shape.w, beta_for(xi), s),
             "global average pool backward");
        else
          ck(maxpool_bwd(x, g, dx, t_, N.geom, beta_for(xi), s), "max pool backward");
        break;
      case NetNode::Op::batch_norm: {
        const std::int64_t c = N.shape.c;
        ReduceArgs a;
        a.mode = ReduceMode::bn_grad;
        a.a = g;
        a.y = y;
        a.x = x;
        a.mean = N.mean;
        a.inv = N.inv;
        a.relu = N.bn.relu;
        a.rows = N.rows;
        a.c = c;
        ck(channel_reduce(a, t_, reduce_scratch_, sum1_, sum2_, s), "batch norm backward");
        const float b = dx ? beta_for(xi) : 0.0f;
        ck(bn_backward(x, g, dx, t_, N.rows, c, N.mean, N.inv, N.bn_p.scale, sum1_, sum2_, N.bn_p.dscale,
                       N.bn_p.dshift, b, s),
           "batch norm backward");
        break;
      }
      case NetNode::Op::relu:
        if (dx) ck(relu_bwd(g, y, dx, t_, N.count, beta_for(xi), s), "relu backward");
        break;
      case NetNode::Op::add: {
        if (N.act == Activation::relu) ck(relu_bwd(g, y, g, t_, N.count, 0.0f, s), "relu backward");
        for (int k : N.in) {
          void* d = grad_[static_cast<std::size_t>(k)];
          if (d) ck(accumulate_t(d, g, t_, N.count, beta_for(k), s), "add backward");
        }
        break;
      }
      case NetNode::Op::input: break;
    }
    if (prof_) cudaEventRecord(prof_->bwd[nodes_.size() - t + 1], s);
    if (on_ready && N.tag >= 0) on_ready(N.tag);
  }
  if (prof_) cudaEventRecord(prof_->bwd[nodes_.size() + 1], s);  // every slot recorded
  if (!din32_.empty()) {
    const Shape& s0 = nodes_[0]->shape;
    if (!written_[0]) zero_grad(grad_[0], n * s0.size());
    ck(from_nhwc(grad_[0], t_, din32_.data, din32_.ld, n, s0.c, s0.h * s0.w, 0.0f, s), "input gradient");
  }
}

}  // namespace dlsweep::trainer::kernels::cuda
