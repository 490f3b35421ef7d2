#include "trainer/kernels/cuda/cudnn_conv.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace dlsweep::trainer::kernels::cuda {

namespace {

template <class Perf>
const Perf* pick(const Perf* perf, int count, const char* what, AlgoRule rule, bool* det) {
  if (rule != AlgoRule::fastest)
    for (int i = 0; i < count; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC) {
        *det = true;
        return &perf[i];
      }
  if (rule == AlgoRule::deterministic_only)
    throw std::runtime_error(fmt::format("cuDNN offers no deterministic {} algorithm for this layer", what));
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) {
      *det = perf[i].determinism == CUDNN_DETERMINISTIC;
      return &perf[i];
    }
  throw std::runtime_error(fmt::format("cuDNN offers no {} algorithm for this layer", what));
}

}  // namespace

void dnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw std::runtime_error(fmt::format("cuDNN: {}: {}", what, cudnnGetErrorString(s)));
}

cudnnTensorDescriptor_t tensor_desc(std::int64_t n, const Shape& s, cudnnTensorFormat_t format, cudnnDataType_t type) {
  cudnnTensorDescriptor_t d = nullptr;
  dnn(cudnnCreateTensorDescriptor(&d), "tensor descriptor");
  dnn(cudnnSetTensor4dDescriptor(d, format, type, static_cast<int>(n), static_cast<int>(s.c), static_cast<int>(s.h),
                                 static_cast<int>(s.w)),
      "tensor descriptor");
  return d;
}

cudnnFilterDescriptor_t filter_desc(const ConvSpec& c, std::int64_t in_channels, cudnnTensorFormat_t format,
                                    cudnnDataType_t type) {
  cudnnFilterDescriptor_t d = nullptr;
  dnn(cudnnCreateFilterDescriptor(&d), "filter descriptor");
  dnn(cudnnSetFilter4dDescriptor(d, type, format, static_cast<int>(c.out_channels), static_cast<int>(in_channels),
                                 static_cast<int>(c.kernel), static_cast<int>(c.kernel)),
      "filter descriptor");
  return d;
}

cudnnConvolutionDescriptor_t conv_desc(const ConvSpec& c, cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t d = nullptr;
  dnn(cudnnCreateConvolutionDescriptor(&d), "convolution descriptor");
  dnn(cudnnSetConvolution2dDescriptor(d, static_cast<int>(c.pad), static_cast<int>(c.pad), static_cast<int>(c.stride),
                                      static_cast<int>(c.stride), 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "convolution descriptor");
  dnn(cudnnSetConvolutionMathType(d, math), "math type");
  return d;
}

std::string ConvAlgos::text() const {
  return fmt::format("algo fwd {}, bwd data {}, bwd filter {}", static_cast<int>(fwd), static_cast<int>(bwd_data),
                     static_cast<int>(bwd_filter));
}

ConvAlgos choose_conv_algos(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                            cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, bool train, bool want_dx,
                            AlgoRule rule) {
  constexpr int kAlgos = 8;
  ConvAlgos a;
  int got = 0;
  bool det = true;
  cudnnConvolutionFwdAlgoPerf_t fp[kAlgos];
  dnn(cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, conv, y, kAlgos, &got, fp), "forward algorithm");
  const auto* f = pick(fp, got, "forward", rule, &det);
  a.fwd = f->algo;
  a.workspace = f->memory;
  a.deterministic = det;
  if (!train) return a;
  cudnnConvolutionBwdFilterAlgoPerf_t bf[kAlgos];
  dnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, y, conv, w, kAlgos, &got, bf), "backward filter algorithm");
  const auto* b = pick(bf, got, "backward filter", rule, &det);
  a.bwd_filter = b->algo;
  a.workspace = std::max(a.workspace, b->memory);
  a.deterministic = a.deterministic && det;
  if (!want_dx) return a;
  cudnnConvolutionBwdDataAlgoPerf_t bd[kAlgos];
  dnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, y, conv, x, kAlgos, &got, bd), "backward data algorithm");
  const auto* d = pick(bd, got, "backward data", rule, &det);
  a.bwd_data = d->algo;
  a.workspace = std::max(a.workspace, d->memory);
  a.deterministic = a.deterministic && det;
  return a;
}

NodeDescs::~NodeDescs() {
  if (x) cudnnDestroyTensorDescriptor(x);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
}

}  // namespace dlsweep::trainer::kernels::cuda
