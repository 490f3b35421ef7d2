// mixed_kernels.hpp — the typed, channel-last kernels of CudaNhwcNet (mixed_kernels.cu): one
// launcher per operation, the storage type (fp32, bf16, fp16) chosen at run time. Activations
// are NHWC ([n, h, w, c], channels innermost, packed); a dense layer's [n, features] is the
// same with h = w = 1. Arithmetic is fp32 (sums of reductions in double), storage is the
// type's; parameters, their gradients and batch-norm statistics stay fp32.
//
// Reductions over the rows of a [rows, c] tensor (bias gradients, batch-norm statistics) are
// deterministic: a fixed number of blocks (reduce_blocks(rows), nhwc_layout.hpp) each sums its
// rows in a fixed order, then the blocks' partials are summed in block order.
//
// Plain C++17 so that nvcc and the C++23 host code both include it. Every launcher is
// asynchronous on `stream`, allocates nothing and returns the launch's cudaError_t. `beta` is
// 0 (overwrite) or 1 (add to what is there).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace dlsweep::trainer::kernels::cuda {

/// Storage types of CudaNhwcNet's activations (values of nhwc_layout.hpp's StorageType).
enum class DType : int { f32 = 0, bf16 = 1, f16 = 2 };

/// dst[(s·hw + p)·c + ch] = src[s·ld_src + ch·hw + p] converted to `t` (NCHW rows -> NHWC).
/// With hw = 1 it is a cast of a [n, c] matrix with row stride ld_src into a packed one.
cudaError_t to_nhwc(const float* src, std::int64_t ld_src, void* dst, DType t, std::int64_t n, std::int64_t c,
                    std::int64_t hw, cudaStream_t stream);
/// dst[s·ld_dst + ch·hw + p] = src[(s·hw + p)·c + ch] (+ beta·dst), src of type `t`.
cudaError_t from_nhwc(const void* src, DType t, float* dst, std::int64_t ld_dst, std::int64_t n, std::int64_t c,
                      std::int64_t hw, float beta, cudaStream_t stream);

/// A dense layer's weights [rows = c·hw, cols] (row stride ld) into a packed copy of type t
/// whose rows are in NHWC order: dst[(p·c + ch)·cols + o] = w[(ch·hw + p)·ld + o]. hw = 1 is
/// a plain cast (the layer's input is a feature vector, not a spatial tensor).
cudaError_t rows_to_nhwc(const float* w, std::int64_t ld, void* dst, DType t, std::int64_t c, std::int64_t hw,
                         std::int64_t cols, cudaStream_t stream);
/// The inverse for a weight gradient computed in NHWC row order (fp32, packed):
/// dst[(ch·hw + p)·ld + o] = src[(p·c + ch)·cols + o].
cudaError_t rows_from_nhwc(const float* src, float* dst, std::int64_t ld, std::int64_t c, std::int64_t hw,
                           std::int64_t cols, cudaStream_t stream);

/// y[r, ch] += b[ch] (when b), then max(·, 0) (when relu); y [rows, c] of type t.
cudaError_t bias_act(void* y, DType t, const float* b, std::int64_t rows, std::int64_t c, bool relu,
                     cudaStream_t stream);
/// y = max(x, 0) (y may be x).
cudaError_t relu_fwd(const void* x, void* y, DType t, std::int64_t count, cudaStream_t stream);
/// dx = (y > 0 ? dy : 0) + beta·dx (dx may be dy when beta is 0).
cudaError_t relu_bwd(const void* dy, const void* y, void* dx, DType t, std::int64_t count, float beta,
                     cudaStream_t stream);
/// y = a + b, then max(·, 0) when relu.
cudaError_t add_fwd(const void* a, const void* b, void* y, DType t, std::int64_t count, bool relu, cudaStream_t stream);
/// dst = src + beta·dst.
cudaError_t accumulate_t(void* dst, const void* src, DType t, std::int64_t count, float beta, cudaStream_t stream);
/// y[s, ch] = mean over p of x[s, p, ch] (in double, p in order); y [n, c].
cudaError_t gap_fwd(const void* x, void* y, DType t, std::int64_t n, std::int64_t c, std::int64_t hw,
                    cudaStream_t stream);
/// dx[s, p, ch] = dy[s, ch] / hw + beta·dx.
cudaError_t gap_bwd(const void* dy, void* dx, DType t, std::int64_t n, std::int64_t c, std::int64_t hw, float beta,
                    cudaStream_t stream);

/// Max pooling, NHWC, square window k, stride s, padding p (padding never wins; the first
/// maximum in row-major window order is the one that gets the gradient).
struct PoolGeom {
  std::int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0, k = 2, s = 2, p = 0;
};
cudaError_t maxpool_fwd(const void* x, void* y, DType t, const PoolGeom& g, cudaStream_t stream);
/// dx = Σ over the windows whose first maximum is this input of dy  (+ beta·dx); a gather,
/// so no atomics and the same result every run.
cudaError_t maxpool_bwd(const void* x, const void* dy, void* dx, DType t, const PoolGeom& g, float beta,
                        cudaStream_t stream);

/// What channel_reduce sums per channel of a [rows, c] tensor `a` (type t):
///   sum:        out1 = Σ a                                  (a conv's bias gradient)
///   masked_sum: a ← (y > 0 ? a : 0) in place, out1 = Σ a    (a dense/conv ReLU + bias gradient)
///   moments:    out1 = Σ a, out2 = Σ a²                     (batch-norm statistics; y unused)
///   bn_grad:    a ← (relu ? (y > 0 ? a : 0) : a) in place, out1 = Σ a, out2 = Σ a·(x − mean)·inv
///               (x = `x`, mean/inv per channel; y read only when relu)
enum class ReduceMode : int { sum = 0, masked_sum = 1, moments = 2, bn_grad = 3 };
struct ReduceArgs {
  ReduceMode mode = ReduceMode::sum;
  void* a = nullptr;          ///< read (and written by the masked modes)
  const void* y = nullptr;    ///< the ReLU's output (masked modes)
  const void* x = nullptr;    ///< bn_grad: the batch norm's input
  const float* mean = nullptr, *inv = nullptr;  ///< bn_grad
  bool relu = false;          ///< bn_grad
  std::int64_t rows = 0, c = 0;
};
/// Scratch doubles channel_reduce needs for (rows, c): 2 · reduce_blocks(rows) · c.
std::size_t reduce_scratch_doubles(std::int64_t rows, std::int64_t c);
/// out1_dev/out2_dev: c doubles each (out2 only for moments and bn_grad).
cudaError_t channel_reduce(const ReduceArgs& args, DType t, double* scratch, double* out1_dev, double* out2_dev,
                           cudaStream_t stream);
/// dst[ch] = (float) src[ch] (a reduced bias gradient into the fp32 gradient arena).
cudaError_t store_sums(const double* src, float* dst, std::int64_t c, cudaStream_t stream);

/// Batch norm (training) from the moments: mean, inv = 1/sqrt(var_biased + eps) into
/// mean_dev/inv_dev; running = (1 − momentum)·running + momentum·batch (unbiased variance,
/// m/(m − 1)); m = rows.
cudaError_t bn_finish_stats(const double* sum, const double* sumsq, std::int64_t c, std::int64_t m, double eps,
                            double momentum, float* mean_dev, float* inv_dev, float* running_mean, float* running_var,
                            cudaStream_t stream);
/// Evaluation: mean = running_mean, inv = 1/sqrt(running_var + eps).
cudaError_t bn_eval_stats(const float* running_mean, const float* running_var, std::int64_t c, double eps,
                          float* mean_dev, float* inv_dev, cudaStream_t stream);
/// y = (x − mean)·inv·scale + shift, then ReLU when relu.
cudaError_t bn_apply(const void* x, void* y, DType t, std::int64_t rows, std::int64_t c, const float* mean,
                     const float* inv, const float* scale, const float* shift, bool relu, cudaStream_t stream);
/// From channel_reduce(bn_grad)'s sums: dscale = Σ g·x̂, dshift = Σ g (fp32 arena), and
/// dx = scale·inv·(g − Σg/m − x̂·Σg·x̂/m) + beta·dx.
cudaError_t bn_backward(const void* x, const void* g, void* dx, DType t, std::int64_t rows, std::int64_t c,
                        const float* mean, const float* inv, const float* scale, const double* sum_g,
                        const double* sum_gx, float* dscale, float* dshift, float beta, cudaStream_t stream);

}  // namespace dlsweep::trainer::kernels::cuda
