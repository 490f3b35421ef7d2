#include "trainer/kernels/cuda/cuda_net.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "trainer/kernels/cuda/cublaslt_dense.hpp"
#include "trainer/kernels/cuda/cuda_memory.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {
const char* op_name(NetNode::Op op) {
  switch (op) {
    case NetNode::Op::input: return "input";
    case NetNode::Op::dense: return "dense";
    case NetNode::Op::conv: return "convolution";
    case NetNode::Op::pool: return "pooling";
    case NetNode::Op::batch_norm: return "batch norm";
    case NetNode::Op::relu: return "relu";
    case NetNode::Op::add: return "add";
  }
  return "?";
}
}  // namespace

float* CudaDenseNet::device_alloc(std::int64_t floats) {
  void* p = nullptr;
  const std::size_t bytes = static_cast<std::size_t>(std::max<std::int64_t>(floats, 1)) * sizeof(float);
  check(cudaMalloc(&p, bytes), "cudaMalloc (activations)");
  owned_.push_back(p);
  check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemsetAsync");  // padding columns stay zero
  return static_cast<float*>(p);
}

CudaDenseNet::CudaDenseNet(cublasLtHandle_t handle, cudaStream_t stream, const NetGraph& graph,
                           const NetOptions& options, NetInputs* inputs)
    : stream_(stream), options_(options), inputs_(inputs) {
  const auto nodes = graph.nodes();
  if (options.precision == Precision::bf16)
    throw std::invalid_argument(
        "precision bf16 is not implemented on device cuda yet (fix: precision fp32 or tf32 on cuda, or device cpu)");
  if (nodes.size() < 2 || nodes[0].op != NetNode::Op::input)
    throw std::invalid_argument("cuda backend: the graph has no layers");
  for (std::size_t i = 1; i < nodes.size(); ++i)
    if (nodes[i].op != NetNode::Op::dense || nodes[i].inputs.size() != 1 ||
        nodes[i].inputs[0] != static_cast<TensorId>(i - 1))
      throw std::invalid_argument(fmt::format(
          "the cuda backend runs chains of dense layers (model mlp) so far, and this model has a {} layer "
          "(fix: model: mlp on device: cuda, or device: cpu for cnn and the resnets)",
          op_name(nodes[i].op)));
  const std::int64_t n = options.batch;
  const bool tf32 = options.precision == Precision::tf32;
  workspace_bytes_ = std::size_t{32} << 20;
  check(cudaMalloc(&workspace_, workspace_bytes_), "cudaMalloc (cuBLASLt workspace)");

  const std::int64_t in = nodes[0].shape.size();
  float* host = nullptr;
  const std::int64_t in_span = n * padded_ld(in);
  check(cudaMallocHost(reinterpret_cast<void**>(&host), static_cast<std::size_t>(in_span) * sizeof(float)),
        "cudaMallocHost (input)");
  std::fill(host, host + in_span, 0.0f);
  input_host_ = MatrixView{host, n, in, padded_ld(in)};
  acts_.push_back(MatrixView{device_alloc(in_span), n, in, padded_ld(in)});
  if (options.input_grad) input_grad_ = MatrixView{device_alloc(in_span), n, in, padded_ld(in)};

  for (std::size_t i = 1; i < nodes.size(); ++i) {
    const NetNode& nd = nodes[i];
    const std::int64_t fin = acts_.back().cols, fout = nd.shape.size();
    Layer l;
    l.w = nd.dense_params.w.data;
    l.b = nd.dense_params.b;
    l.dw = nd.dense_params.dw.data;
    l.db = nd.dense_params.db;
    l.tag = nd.tag;
    l.relu = nd.act == Activation::relu;
    const bool first = i == 1;
    const bool want_dx = options.train && (!first || options.input_grad);
    DenseShape s{n, fin, fout, padded_ld(fin), nd.dense_params.w.ld, padded_ld(fout), want_dx ? padded_ld(fin) : 0};
    auto g = CublasLtDense::create(handle, s, l.relu, tf32, workspace_, workspace_bytes_);
    if (!g) throw std::runtime_error("cuBLASLt: " + g.error().what);
    l.gemm = std::move(*g);
    acts_.push_back(MatrixView{device_alloc(n * padded_ld(fout)), n, fout, padded_ld(fout)});
    if (options.train) grads_.push_back(MatrixView{device_alloc(n * padded_ld(fout)), n, fout, padded_ld(fout)});
    layers_.push_back(std::move(l));
  }
  if (!options.train) grads_.push_back(MatrixView{});
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (inputs_) inputs_->add(input_host_.data, this);
}

CudaDenseNet::~CudaDenseNet() {
  if (inputs_) inputs_->remove(input_host_.data);
  cudaStreamSynchronize(stream_);
  layers_.clear();
  for (void* p : owned_) cudaFree(p);
  cudaFree(workspace_);
  cudaFreeHost(input_host_.data);
}

void CudaDenseNet::forward() {
  const MatrixView& x = acts_.front();
  if (input_on_device_) input_on_device_ = false;
  else
    check(cudaMemcpyAsync(x.data, input_host_.data, static_cast<std::size_t>(x.span()) * sizeof(float),
                          cudaMemcpyHostToDevice, stream_),
          "input upload");
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    Layer& ly = layers_[l];
    if (auto s = ly.gemm->forward(acts_[l].data, ly.w, ly.b, acts_[l + 1].data, stream_); !s)
      throw std::runtime_error("cuBLASLt forward: " + s.error().what);
  }
}

void CudaDenseNet::backward(const LayerReadyFn& on_ready) {
  if (!options_.train) throw std::logic_error("CudaDenseNet::backward in evaluation mode");
  for (std::size_t l = layers_.size(); l-- > 0;) {
    Layer& ly = layers_[l];
    float* dx = l > 0 ? grads_[l - 1].data : (options_.input_grad ? input_grad_.data : nullptr);
    if (auto s = ly.gemm->backward(acts_[l].data, ly.w, acts_[l + 1].data, grads_[l].data, ly.dw, ly.db, dx, stream_);
        !s)
      throw std::runtime_error("cuBLASLt backward: " + s.error().what);
    if (on_ready && ly.tag >= 0) on_ready(ly.tag);
  }
}

std::vector<std::string> CudaDenseNet::describe() const {
  std::vector<std::string> out{fmt::format("input [{}] (host staging, copied on the stream)", acts_.front().cols)};
  for (std::size_t l = 0; l < layers_.size(); ++l)
    out.push_back(fmt::format("dense {}->{}{} cublasLt{}", acts_[l].cols, acts_[l + 1].cols,
                              layers_[l].relu ? " relu" : "",
                              options_.precision == Precision::tf32 ? " tf32" : " fp32"));
  return out;
}

}  // namespace dlsweep::trainer::kernels::cuda
