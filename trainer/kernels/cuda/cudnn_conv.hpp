// cudnn_conv.hpp — what both GPU nets (cuda_net: NCHW fp32/tf32; cuda_nhwc_net: NHWC tf32/bf16/
// fp16) do the same way with cuDNN: descriptors, the choice of convolution algorithms, and the
// error check. Throws std::runtime_error naming the call on a cuDNN failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cudnn.h>

#include "trainer/kernels/net_graph.hpp"

namespace dlsweep::trainer::kernels::cuda {

/// Throws std::runtime_error("cuDNN: WHAT: status text") unless s is CUDNN_STATUS_SUCCESS.
void dnn(cudnnStatus_t s, const char* what);

/// [n, c, h, w] in `format` (NCHW or NHWC) of `type`; the caller destroys it.
cudnnTensorDescriptor_t tensor_desc(std::int64_t n, const Shape& s, cudnnTensorFormat_t format, cudnnDataType_t type);
/// The filter of `c` over `in_channels` channels (KCRS for NCHW, KRSC for NHWC).
cudnnFilterDescriptor_t filter_desc(const ConvSpec& c, std::int64_t in_channels, cudnnTensorFormat_t format,
                                    cudnnDataType_t type);
/// Cross-correlation with c's padding and stride, fp32 accumulation, `math`.
cudnnConvolutionDescriptor_t conv_desc(const ConvSpec& c, cudnnMathType_t math);

/// How algorithms are chosen from cuDNN's heuristic list (fastest first):
///   deterministic_only: the first deterministic one, else an error (runs repeat bit for bit);
///   prefer_deterministic: the first deterministic one, else the first;
///   fastest: the first.
enum class AlgoRule { deterministic_only, prefer_deterministic, fastest };

struct ConvAlgos {
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  std::size_t workspace = 0;  ///< bytes the chosen algorithms need at most
  bool deterministic = true;  ///< every chosen algorithm is
  /// "algo fwd 1, bwd data 1, bwd filter 1".
  std::string text() const;
};

/// The forward algorithm, and in training the backward-filter one and (want_dx) the
/// backward-data one, by `rule`.
ConvAlgos choose_conv_algos(cudnnHandle_t h, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
                            cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, bool train, bool want_dx,
                            AlgoRule rule);

/// The cuDNN descriptors of one node of a GPU net (input x, output y, and for a convolution its
/// filter, convolution and algorithms), destroyed with it. Move-only.
struct NodeDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvAlgos algos;
  NodeDescs() = default;
  NodeDescs(const NodeDescs&) = delete;
  NodeDescs& operator=(const NodeDescs&) = delete;
  ~NodeDescs();
};


}  // namespace dlsweep::trainer::kernels::cuda
