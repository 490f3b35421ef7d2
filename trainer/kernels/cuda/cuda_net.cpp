#include "trainer/kernels/cuda/cuda_net.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "trainer/kernels/cuda/cublaslt_dense.hpp"
#include "trainer/kernels/cuda/cuda_memory.hpp"
#include "trainer/kernels/cuda/cudnn_conv.hpp"
#include "trainer/kernels/cuda/gpu_net_node.hpp"
#include "trainer/kernels/cuda/layer_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {

cudnnTensorDescriptor_t nchw_desc(std::int64_t n, const Shape& s) {
  return tensor_desc(n, s, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT);
}

}  // namespace

struct CudaNet::Node : GpuNodeHeader {
  // dense
  std::unique_ptr<CublasLtDense> gemm;
  DenseParams dense;
  // conv
  ConvParams conv_p;
  std::int64_t w_cols = 0;  ///< in·k·k (packed filter row)
  float *w_packed = nullptr, *dw_packed = nullptr;  ///< when the weights' rows are padded
  NodeDescs d;  ///< x, y (convolution, pooling, batch norm), filter, convolution, algorithms
  cudnnTensorDescriptor_t c_desc = nullptr;  ///< bias / batch-norm parameters
  // pool
  cudnnPoolingDescriptor_t pool = nullptr;
  // batch norm
  BatchNormParams bn_p;
  BatchNormSpec bn;
  float *save_mean = nullptr, *save_inv = nullptr;

  ~Node() {
    if (c_desc) cudnnDestroyTensorDescriptor(c_desc);
    if (pool) cudnnDestroyPoolingDescriptor(pool);
  }
};

float* CudaNet::device_alloc(std::int64_t floats) {
  void* p = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(std::max<std::int64_t>(floats, 1)) * sizeof(float);
  check(cudaMalloc(&p, bytes), "cudaMalloc (activations)");
  owned_.push_back(p);
  check(cudaMemsetAsync(p, 0, bytes, h_.stream), "cudaMemsetAsync");
  return static_cast<float*>(p);
}

CudaNet::CudaNet(const CudaHandles& h, const NetGraph& graph, const NetOptions& options, NetInputs* inputs)
    : h_(h), options_(options), graph_(&graph), inputs_(inputs) {
  if (options.precision == Precision::bf16)
    throw std::invalid_argument(
        "precision bf16 is not implemented on device cuda yet (fix: precision fp32 or tf32 on cuda, or device cpu)");
  const auto gn = graph.nodes();
  if (gn.empty() || gn[0].op != NetNode::Op::input) throw std::invalid_argument("cuda backend: the graph has no input");
  const std::int64_t n = options.batch;
  const bool tf32 = options.precision == Precision::tf32;
  const bool train = options.train;

  // Which tensors need a gradient: every node's output but the input (unless asked).
  act_.resize(gn.size());
  grad_.resize(gn.size());
  written_.assign(gn.size(), 0);
  for (std::size_t t = 0; t < gn.size(); ++t) {
    const std::int64_t size = gn[t].shape.size();
    act_[t] = MatrixView{device_alloc(n * size), n, size, size};
    if (train && (t > 0 || options.input_grad)) grad_[t] = MatrixView{device_alloc(n * size), n, size, size};
  }
  {
    const std::int64_t size = gn[0].shape.size();
    float* host = nullptr;
    check(cudaMallocHost(reinterpret_cast<void**>(&host), static_cast<std::size_t>(n * size) * sizeof(float)),
          "cudaMallocHost (input)");
    std::fill(host, host + n * size, 0.0f);
    input_host_ = MatrixView{host, n, size, size};
  }
  describe_.push_back(fmt::format("input [{}x{}x{}] (page-locked host staging, or gathered on the GPU)", gn[0].shape.c,
                                  gn[0].shape.h, gn[0].shape.w));

  constexpr std::size_t kGemmWorkspace = std::size_t{32} << 20;  // the dense layers' (cuBLASLt, bias sums)
  float* gemm_ws = nullptr;
  std::size_t ws = 0;  // the convolutions' (cuDNN), the largest any layer asks for
  nodes_.push_back(std::make_unique<Node>());
  for (std::size_t t = 1; t < gn.size(); ++t) {
    const NetNode& nd = gn[t];
    auto node = std::make_unique<Node>();
    Node& N = *node;
    N.set(gn, t, n);
    const int x = N.in[0];
    switch (nd.op) {
      case NetNode::Op::dense: {
        if (train && read_by_several(gn, x))
          throw std::invalid_argument("cuda backend: a dense layer's input read by several nodes");
        N.dense = nd.dense_params;
        const std::int64_t fin = N.in_shape.size(), fout = nd.shape.size();
        const bool want_dx = train && !grad_[static_cast<std::size_t>(x)].empty();
        DenseShape s{n, fin, fout, fin, nd.dense_params.w.ld, fout, want_dx ? fin : 0};
        if (!gemm_ws) gemm_ws = device_alloc(static_cast<std::int64_t>(kGemmWorkspace / sizeof(float)));
        auto g = CublasLtDense::create(h.lt, s, nd.act == Activation::relu, tf32, gemm_ws, kGemmWorkspace);
        if (!g) throw std::runtime_error("cuBLASLt: " + g.error().what);
        N.gemm = std::move(*g);
        describe_.push_back(fmt::format("dense {}->{}{} cuBLASLt {}", fin, fout, nd.act == Activation::relu ? " relu" : "",
                                        tf32 ? "tf32" : "fp32"));
        break;
      }
      case NetNode::Op::conv: {
        N.conv_p = nd.conv_params;
        const auto& c = nd.conv;
        N.w_cols = N.in_shape.c * c.kernel * c.kernel;
        N.d.x = nchw_desc(n, N.in_shape);
        N.d.y = nchw_desc(n, nd.shape);
        N.d.w = filter_desc(c, N.in_shape.c, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT);
        N.d.conv = conv_desc(c, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
        if (N.conv_p.b) {
          N.c_desc = nchw_desc(1, Shape{c.out_channels, 1, 1});
        }
        if (N.conv_p.w.ld != N.w_cols) {  // cuDNN reads packed filters: copy through packed buffers
          N.w_packed = device_alloc(c.out_channels * N.w_cols);
          if (train) N.dw_packed = device_alloc(c.out_channels * N.w_cols);
        }
        // Deterministic algorithms only: fp32 runs repeat bit for bit, as the CPU's do.
        N.d.algos = choose_conv_algos(h.dnn, N.d.x, N.d.w, N.d.conv, N.d.y, train,
                                    !grad_[static_cast<std::size_t>(x)].empty(), AlgoRule::deterministic_only);
        ws = std::max(ws, N.d.algos.workspace);
        describe_.push_back(fmt::format("conv {}x{}/{} pad {} {}->{}{}{} cuDNN {} ({})", c.kernel, c.kernel, c.stride,
                                        c.pad, N.in_shape.c, c.out_channels, N.conv_p.b ? " bias" : "",
                                        c.act == Activation::relu ? " relu" : "", tf32 ? "tf32" : "fp32",
                                        N.d.algos.text()));
        N.act = c.act;
        break;
      }
      case NetNode::Op::pool: {
        if (nd.pool.kind == PoolSpec::Kind::max) {
          N.d.x = nchw_desc(n, N.in_shape);
          N.d.y = nchw_desc(n, nd.shape);
          dnn(cudnnCreatePoolingDescriptor(&N.pool), "pooling descriptor");
          const int k = static_cast<int>(nd.pool.kernel), p = static_cast<int>(nd.pool.pad),
                    s = static_cast<int>(nd.pool.stride);
          dnn(cudnnSetPooling2dDescriptor(N.pool, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN, k, k, p, p, s,
                                          s),
              "pooling descriptor");
          describe_.push_back(fmt::format("max pool {}x{}/{} cuDNN", k, k, s));
        } else {
          describe_.push_back("global average pool");
        }
        break;
      }
      case NetNode::Op::batch_norm: {
        N.bn_p = nd.bn_params;
        N.bn = nd.bn;
        if (N.bn.eps < CUDNN_BN_MIN_EPSILON)
          throw std::invalid_argument(fmt::format("cuda backend: batch-norm eps {:g} below cuDNN's minimum {:g}", N.bn.eps,
                                                  CUDNN_BN_MIN_EPSILON));
        N.d.x = nchw_desc(n, N.in_shape);
        dnn(cudnnCreateTensorDescriptor(&N.c_desc), "batch-norm descriptor");
        dnn(cudnnDeriveBNTensorDescriptor(N.c_desc, N.d.x, CUDNN_BATCHNORM_SPATIAL), "batch-norm descriptor");
        if (train) {
          N.save_mean = device_alloc(nd.shape.c);
          N.save_inv = device_alloc(nd.shape.c);
        }
        describe_.push_back(fmt::format("batch norm {}{} cuDNN", nd.shape.c, N.bn.relu ? " relu" : ""));
        break;
      }
      case NetNode::Op::relu: describe_.push_back("relu"); break;
      case NetNode::Op::add: describe_.push_back(nd.act == Activation::relu ? "add relu" : "add"); break;
      case NetNode::Op::input: throw std::invalid_argument("cuda backend: a second input node");
    }
    nodes_.push_back(std::move(node));
  }
  workspace_bytes_ = ws;
  check(cudaMalloc(&workspace_, std::max<std::size_t>(workspace_bytes_, 1)), "cudaMalloc (workspace)");
  check(cudaStreamSynchronize(h_.stream), "cudaStreamSynchronize");
  if (inputs_) inputs_->add(input_host_.data, this);
}

CudaNet::~CudaNet() {
  if (inputs_) inputs_->remove(input_host_.data);
  cudaStreamSynchronize(h_.stream);
  nodes_.clear();
  for (void* p : owned_) cudaFree(p);
  cudaFree(workspace_);
  cudaFreeHost(input_host_.data);
}

void CudaNet::forward() {
  const MatrixView& x0 = act_.front();
  if (input_on_device_) input_on_device_ = false;
  else
    check(cudaMemcpyAsync(x0.data, input_host_.data, static_cast<std::size_t>(x0.span()) * sizeof(float),
                          cudaMemcpyHostToDevice, h_.stream),
          "input upload");
  fwd_graph_.run(h_.stream, false, [this] { forward_pass(); });
}

void CudaNet::backward(const LayerReadyFn& on_ready) {
  if (!options_.train) throw std::logic_error("CudaNet::backward in evaluation mode");
  bwd_graph_.run(h_.stream, static_cast<bool>(on_ready), [&] { backward_pass(on_ready); });
}

void CudaNet::forward_pass() {
  const cudaStream_t s = h_.stream;
  const float one = 1.0f, zero = 0.0f;
  const std::int64_t n = options_.batch;
  for (std::size_t t = 1; t < nodes_.size(); ++t) {
    Node& N = *nodes_[t];
    float* y = act_[t].data;
    const float* x = act_[static_cast<std::size_t>(N.in[0])].data;
    switch (N.op) {
      case NetNode::Op::dense:
        if (auto st = N.gemm->forward(x, N.dense.w.data, N.dense.b, y, s); !st)
          throw std::runtime_error("cuBLASLt forward: " + st.error().what);
        break;
      case NetNode::Op::conv: {
        const float* w = N.conv_p.w.data;
        if (N.w_packed) {
          check(cudaMemcpy2DAsync(N.w_packed, N.w_cols * sizeof(float), w, N.conv_p.w.ld * sizeof(float),
                                  N.w_cols * sizeof(float), N.conv_p.w.rows, cudaMemcpyDeviceToDevice, s),
                "pack filter");
          w = N.w_packed;
        }
        dnn(cudnnConvolutionForward(h_.dnn, &one, N.d.x, x, N.d.w, w, N.d.conv, N.d.algos.fwd, workspace_,
                                    workspace_bytes_, &zero, N.d.y, y),
            "convolution forward");
        check(bias_act_nchw(y, N.conv_p.b, n, N.shape.c, N.shape.h * N.shape.w, N.act == Activation::relu, s),
              "bias/relu");
        break;
      }
      case NetNode::Op::pool:
        if (N.pool)
          dnn(cudnnPoolingForward(h_.dnn, N.pool, &one, N.d.x, x, &zero, N.d.y, y), "max pool forward");
        else
          check(global_avg_forward(x, y, n, N.in_shape.c, N.in_shape.h * N.in_shape.w, s), "global average pool");
        break;
      case NetNode::Op::batch_norm:
        if (options_.train)
          dnn(cudnnBatchNormalizationForwardTraining(h_.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, N.d.x, x,
                                                     N.d.x, y, N.c_desc, N.bn_p.scale, N.bn_p.shift, N.bn.momentum,
                                                     N.bn_p.running_mean, N.bn_p.running_var, N.bn.eps, N.save_mean,
                                                     N.save_inv),
              "batch norm forward");
        else
          dnn(cudnnBatchNormalizationForwardInference(h_.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, N.d.x, x,
                                                      N.d.x, y, N.c_desc, N.bn_p.scale, N.bn_p.shift,
                                                      N.bn_p.running_mean, N.bn_p.running_var, N.bn.eps),
              "batch norm inference");
        if (N.bn.relu) check(relu_forward(y, y, N.count, s), "relu");
        break;
      case NetNode::Op::relu: check(relu_forward(x, y, N.count, s), "relu"); break;
      case NetNode::Op::add:
        check(add_forward(x, act_[static_cast<std::size_t>(N.in[1])].data, y, N.count, N.act == Activation::relu, s),
              "add");
        break;
      case NetNode::Op::input: break;
    }
  }
}

void CudaNet::backward_pass(const LayerReadyFn& on_ready) {
  const cudaStream_t s = h_.stream;
  const float one = 1.0f, zero = 0.0f;
  const std::int64_t n = options_.batch;
  std::fill(written_.begin(), written_.end(), 0);
  written_.back() = 1;  // output_grad(), filled by the caller
  // beta for writing the gradient of tensor t: 0 for its first writer, 1 after.
  auto beta_for = [&](int t) -> float {
    const float b = written_[static_cast<std::size_t>(t)] ? 1.0f : 0.0f;
    written_[static_cast<std::size_t>(t)] = 1;
    return b;
  };
  for (std::size_t t = nodes_.size(); t-- > 1;) {
    Node& N = *nodes_[t];
    float* g = grad_[t].data;
    const float* y = act_[t].data;
    const int xi = N.in[0];
    const float* x = act_[static_cast<std::size_t>(xi)].data;
    float* dx = grad_[static_cast<std::size_t>(xi)].data;  // null where no gradient is needed
    if (!written_[t]) check(cudaMemsetAsync(g, 0, static_cast<std::size_t>(N.count) * sizeof(float), s), "zero grad");
    switch (N.op) {
      case NetNode::Op::dense: {
        if (dx) beta_for(xi);
        if (auto st = N.gemm->backward(x, N.dense.w.data, y, g, N.dense.dw.data, N.dense.db, dx, s); !st)
          throw std::runtime_error("cuBLASLt backward: " + st.error().what);
        break;
      }
      case NetNode::Op::conv: {
        if (N.act == Activation::relu) check(relu_backward(g, y, g, N.count, 0.0f, s), "relu backward");
        if (N.conv_p.db)
          dnn(cudnnConvolutionBackwardBias(h_.dnn, &one, N.d.y, g, &zero, N.c_desc, N.conv_p.db), "bias backward");
        float* dw = N.dw_packed ? N.dw_packed : N.conv_p.dw.data;
        dnn(cudnnConvolutionBackwardFilter(h_.dnn, &one, N.d.x, x, N.d.y, g, N.d.conv, N.d.algos.bwd_filter, workspace_,
                                           workspace_bytes_, &zero, N.d.w, dw),
            "convolution backward filter");
        if (N.dw_packed)
          check(cudaMemcpy2DAsync(N.conv_p.dw.data, N.conv_p.dw.ld * sizeof(float), N.dw_packed,
                                  N.w_cols * sizeof(float), N.w_cols * sizeof(float), N.conv_p.dw.rows,
                                  cudaMemcpyDeviceToDevice, s),
                "unpack filter gradient");
        if (dx) {
          const float b = beta_for(xi);
          const float* w = N.w_packed ? N.w_packed : N.conv_p.w.data;
          dnn(cudnnConvolutionBackwardData(h_.dnn, &one, N.d.w, w, N.d.y, g, N.d.conv, N.d.algos.bwd_data, workspace_,
                                           workspace_bytes_, &b, N.d.x, dx),
              "convolution backward data");
        }
        break;
      }
      case NetNode::Op::pool:
        if (!dx) break;
        if (N.pool) {
          const float b = beta_for(xi);
          dnn(cudnnPoolingBackward(h_.dnn, N.pool, &one, N.d.y, y, N.d.y, g, N.d.x, x, &b, N.d.x, dx),
              "max pool backward");
        } else {
          check(global_avg_backward(g, dx, n, N.in_shape.c, N.in_shape.h * N.in_shape.w, beta_for(xi), s),
                "global average pool backward");
        }
        break;
      case NetNode::Op::batch_norm: {
        if (N.bn.relu) check(relu_backward(g, y, g, N.count, 0.0f, s), "relu backward");
        float* target = dx;
        float b = 0.0f;
        if (dx) b = beta_for(xi);
        else target = g;  // the data gradient is not needed: written over g (read before)
        dnn(cudnnBatchNormalizationBackward(h_.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &b, &one, &zero, N.d.x, x,
                                            N.d.x, g, N.d.x, target, N.c_desc, N.bn_p.scale, N.bn_p.dscale,
                                            N.bn_p.dshift, N.bn.eps, N.save_mean, N.save_inv),
            "batch norm backward");
        break;
      }
      case NetNode::Op::relu:
        if (dx) check(relu_backward(g, y, dx, N.count, beta_for(xi), s), "relu backward");
        break;
      case NetNode::Op::add: {
        if (N.act == Activation::relu) check(relu_backward(g, y, g, N.count, 0.0f, s), "relu backward");
        for (int k : N.in) {
          float* d = grad_[static_cast<std::size_t>(k)].data;
          if (d) check(accumulate(d, g, N.count, beta_for(k), s), "add backward");
        }
        break;
      }
      case NetNode::Op::input: break;
    }
    if (on_ready && N.tag >= 0) on_ready(N.tag);
  }
}

}  // namespace dlsweep::trainer::kernels::cuda
