#include "trainer/kernels/cuda/cuda_nhwc_net.hpp"

#include <algorithm>
#include <stdexcept>

#include <cudnn.h>
#include <fmt/format.h>

#include "trainer/kernels/cuda/cuda_memory.hpp"
#include "trainer/kernels/cuda/lt_gemm.hpp"
#include "trainer/kernels/cuda/nhwc_layout.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {

void dnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuDNN: {}: {}", what, cudnnGetErrorString(s)));
}

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
  cudnnTensorDescriptor_t d = nullptr;
  dnn(cudnnCreateTensorDescriptor(&d), "tensor descriptor");
  dnn(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NHWC, dnn_type(t), static_cast<int>(n), static_cast<int>(s.c),
                                 static_cast<int>(s.h), static_cast<int>(s.w)),
      "tensor descriptor");
  return d;
}

// deterministic: the fastest deterministic algorithm in cuDNN's heuristic order, else its
// first (said in describe()); otherwise its first. `det` reports which kind was taken.
template <class Perf>
const Perf* pick(const Perf* perf, int count, const char* what, bool deterministic, bool* det) {
  for (int i = 0; deterministic && i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) {
      *det = true;
      return &perf[i];
    }
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) {
      *det = perf[i].determinism == CUDNN_DETERMINISTIC;
      return &perf[i];
    }
  throw std::runtime_error(fmt::format("cuDNN offers no {} algorithm for this layer (NHWC)", what));
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

struct CudaNhwcNet::Node {
  NetNode::Op op = NetNode::Op::input;
  std::vector<int> in;
  int tag = -1;
  Shape in_shape, shape;
  std::int64_t rows = 0;      ///< n·h·w of the output (channel-last rows)
  std::int64_t in_rows = 0;   ///< n·h·w of the input
  std::int64_t count = 0;     ///< elements of the output
  Activation act = Activation::none;
  // dense
  DenseParams dense;
  std::unique_ptr<LtGemm> fwd, bwd_w, bwd_x;
  void* w_t = nullptr;        ///< the weights in the storage type, rows in NHWC order
  float* dw_nhwc = nullptr;   ///< fp32 weight gradient in NHWC row order (spatial inputs only)
  // conv
  ConvParams conv_p;
  std::int64_t k = 0, rs = 0;
  void *wf = nullptr, *dwf = nullptr;  ///< KRSC filter and its gradient, storage type
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo{};
  // pool
  bool global = false;
  PoolGeom geom;
  // batch norm
  BatchNormParams bn_p;
  BatchNormSpec bn;
  float *mean = nullptr, *inv = nullptr;

  ~Node() {
    if (x_desc) cudnnDestroyTensorDescriptor(x_desc);
    if (y_desc) cudnnDestroyTensorDescriptor(y_desc);
    if (w_desc) cudnnDestroyFilterDescriptor(w_desc);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
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
    N.op = nd.op;
    N.in.assign(nd.inputs.begin(), nd.inputs.end());
    N.tag = nd.tag;
    N.shape = nd.shape;
    N.in_shape = gn[static_cast<std::size_t>(N.in.at(0))].shape;
    N.rows = n * nd.shape.h * nd.shape.w;
    N.in_rows = n * N.in_shape.h * N.in_shape.w;
    N.count = n * nd.shape.size();
    N.act = nd.act;
    max_c = std::max(max_c, nd.shape.c);
    const int x = N.in[0];
    const bool want_dx = train && grad_[static_cast<std::size_t>(x)] != nullptr;
    switch (nd.op) {
      case NetNode::Op::dense: {
        if (train && std::count_if(gn.begin(), gn.end(), [&](const NetNode& o) {
                       return std::find(o.inputs.begin(), o.inputs.end(), x) != o.inputs.end();
                     }) > 1)
          throw std::invalid_argument("cuda backend: a dense layer's input read by several nodes");
        N.dense = nd.dense_params;
        const std::int64_t fin = N.in_shape.size(), fout = nd.shape.size();
        N.w_t = alloc_bytes(static_cast<std::size_t>(fin * fout) * esize_);
        const bool spatial = N.in_shape.h * N.in_shape.w > 1;
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
        N.x_desc = nhwc_desc(n, N.in_shape, t_);
        N.y_desc = nhwc_desc(n, nd.shape, t_);
        dnn(cudnnCreateFilterDescriptor(&N.w_desc), "filter descriptor");
        dnn(cudnnSetFilter4dDescriptor(N.w_desc, dnn_type(t_), CUDNN_TENSOR_NHWC, static_cast<int>(c.out_channels),
                                       static_cast<int>(N.in_shape.c), static_cast<int>(c.kernel),
                                       static_cast<int>(c.kernel)),
            "filter descriptor");
        dnn(cudnnCreateConvolutionDescriptor(&N.conv), "convolution descriptor");
        dnn(cudnnSetConvolution2dDescriptor(N.conv, static_cast<int>(c.pad), static_cast<int>(c.pad),
                                            static_cast<int>(c.stride), static_cast<int>(c.stride), 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "convolution descriptor");
        dnn(cudnnSetConvolutionMathType(N.conv, t_ == DType::f32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH),
            "math type");
        const std::int64_t wcount = N.k * N.in_shape.c * N.rs;
        N.wf = alloc_bytes(static_cast<std::size_t>(wcount) * esize_);
        if (train) N.dwf = alloc_bytes(static_cast<std::size_t>(wcount) * esize_);
        constexpr int kAlgos = 8;
        int got = 0;
        bool det_f = true, det_bf = true, det_bd = true;
        cudnnConvolutionFwdAlgoPerf_t fp[kAlgos];
        dnn(cudnnGetConvolutionForwardAlgorithm_v7(h.dnn, N.x_desc, N.w_desc, N.conv, N.y_desc, kAlgos, &got, fp),
            "forward algorithm");
        const auto* f = pick(fp, got, "forward", options.deterministic, &det_f);
        N.fwd_algo = f->algo;
        ws = std::max(ws, f->memory);
        if (train) {
          cudnnConvolutionBwdFilterAlgoPerf_t bf[kAlgos];
          dnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.dnn, N.x_desc, N.y_desc, N.conv, N.w_desc, kAlgos, &got,
                                                            bf),
              "backward filter algorithm");
          const auto* b = pick(bf, got, "backward filter", options.deterministic, &det_bf);
          N.bwd_filter_algo = b->algo;
          ws = std::max(ws, b->memory);
          if (want_dx) {
            cudnnConvolutionBwdDataAlgoPerf_t bd[kAlgos];
            dnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(h.dnn, N.w_desc, N.y_desc, N.conv, N.x_desc, kAlgos, &got,
                                                            bd),
                "backward data algorithm");
            const auto* d = pick(bd, got, "backward data", options.deterministic, &det_bd);
            N.bwd_data_algo = d->algo;
            ws = std::max(ws, d->memory);
          }
        }
        scratch = std::max(scratch, reduce_scratch_doubles(N.rows, N.k));
        describe_.push_back(fmt::format(
            "conv {}x{}/{} pad {} {}->{}{}{} cuDNN NHWC {} (algo fwd {}, bwd data {}, bwd filter {}{})", c.kernel,
            c.kernel, c.stride, c.pad, N.in_shape.c, c.out_channels, N.conv_p.b ? " bias" : "",
            c.act == Activation::relu ? " relu" : "", tn, static_cast<int>(N.fwd_algo),
            static_cast<int>(N.bwd_data_algo), static_cast<int>(N.bwd_filter_algo),
            det_f && det_bf && det_bd ? ""
            : options.deterministic ? "; not all deterministic: none offered"
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
}

CudaNhwcNet::~CudaNhwcNet() {
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
  fwd_graph_.run(h_.stream, false, [this] { forward_pass(); });
}

void CudaNhwcNet::backward(const LayerReadyFn& on_ready) {
  if (!options_.train) throw std::logic_error("CudaNhwcNet::backward in evaluation mode");
  bwd_graph_.run(h_.stream, static_cast<bool>(on_ready), [&] { backward_pass(on_ready); });
}

void CudaNhwcNet::forward_pass() {
  const cudaStream_t s = h_.stream;
  const std::int64_t n = options_.batch;
  const float one = 1.0f, zero = 0.0f;
  const Shape& s0 = nodes_[0]->shape;
  ck(to_nhwc(in32_.data, in32_.ld, act_[0], t_, n, s0.c, s0.h * s0.w, s), "input to NHWC");
  for (std::size_t t = 1; t < nodes_.size(); ++t) {
    Node& N = *nodes_[t];
    void* y = act_[t];
    const void* x = act_[static_cast<std::size_t>(N.in[0])];
    switch (N.op) {
      case NetNode::Op::dense: {
        const std::int64_t hw = N.in_shape.h * N.in_shape.w;
        const std::int64_t c = hw > 1 ? N.in_shape.c : N.in_shape.size();
        ck(rows_to_nhwc(N.dense.w.data, N.dense.w.ld, N.w_t, t_, c, hw, N.shape.size(), s), "dense weights");
        if (auto st = N.fwd->run(N.w_t, x, y, 0.0f, s); !st) throw std::runtime_error(st.error().what);
        ck(bias_act(y, t_, N.dense.b, n, N.shape.size(), N.act == Activation::relu, s), "dense bias/relu");
        break;
      }
      case NetNode::Op::conv: {
        ck(to_nhwc(N.conv_p.w.data, N.conv_p.w.ld, N.wf, t_, N.k, N.in_shape.c, N.rs, s), "filter to KRSC");
        dnn(cudnnConvolutionForward(h_.dnn, &one, N.x_desc, x, N.w_desc, N.wf, N.conv, N.fwd_algo, workspace_,
                                    workspace_bytes_, &zero, N.y_desc, y),
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
  }
  ck(from_nhwc(act_.back(), t_, out32_.data, out32_.ld, n, out32_.cols, 1, 0.0f, s), "output to fp32");
}

void CudaNhwcNet::backward_pass(const LayerReadyFn& on_ready) {
  const cudaStream_t s = h_.stream;
  const std::int64_t n = options_.batch;
  const float one = 1.0f, zero = 0.0f;
  std::fill(written_.begin(), written_.end(), 0);
  ck(to_nhwc(dout32_.data, dout32_.ld, grad_.back(), t_, n, dout32_.cols, 1, s), "output gradient");
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
        if (hw > 1) {
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
        dnn(cudnnConvolutionBackwardFilter(h_.dnn, &one, N.x_desc, x, N.y_desc, g, N.conv, N.bwd_filter_algo,
                                           workspace_, workspace_bytes_, &zero, N.w_desc, N.dwf),
            "convolution backward filter");
        ck(from_nhwc(N.dwf, t_, N.conv_p.dw.data, N.conv_p.dw.ld, N.k, N.in_shape.c, N.rs, 0.0f, s),
           "filter gradient to KCRS");
        if (dx) {
          const float b = beta_for(xi);
          dnn(cudnnConvolutionBackwardData(h_.dnn, &one, N.w_desc, N.wf, N.y_desc, g, N.conv, N.bwd_data_algo,
                                           workspace_, workspace_bytes_, &b, N.x_desc, dx),
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
    if (on_ready && N.tag >= 0) on_ready(N.tag);
  }
  if (!din32_.empty()) {
    const Shape& s0 = nodes_[0]->shape;
    if (!written_[0]) zero_grad(grad_[0], n * s0.size());
    ck(from_nhwc(grad_[0], t_, din32_.data, din32_.ld, n, s0.c, s0.h * s0.w, 0.0f, s), "input gradient");
  }
}

}  // namespace dlsweep::trainer::kernels::cuda
