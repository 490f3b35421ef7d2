// layer_kernels.hpp — the element-wise and per-channel kernels of CudaNet (layer_kernels.cu)
// that cuDNN and cuBLASLt do not cover, on packed NCHW activations ([n, c, hw] floats).
// `beta` is 0 (overwrite) or 1 (add to what is there: a tensor read by several nodes gets the
// sum of their gradients). Asynchronous on `stream`, nothing allocated.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace dlsweep::trainer::kernels::cuda {

/// y[n, c, hw] += b[c] (when b), then y = max(y, 0) (when relu).
cudaError_t bias_act_nchw(float* y, const float* b, std::int64_t n, std::int64_t c, std::int64_t hw, bool relu,
                          cudaStream_t stream);
/// y = max(x, 0) (count floats; y may be x).
cudaError_t relu_forward(const float* x, float* y, std::int64_t count, cudaStream_t stream);
/// dx = (y > 0 ? dy : 0) + beta·dx (dx may be dy when beta is 0).
cudaError_t relu_backward(const float* dy, const float* y, float* dx, std::int64_t count, float beta,
                          cudaStream_t stream);
/// y = a + b, then max(·, 0) when relu.
cudaError_t add_forward(const float* a, const float* b, float* y, std::int64_t count, bool relu, cudaStream_t stream);
/// dst = src + beta·dst.
cudaError_t accumulate(float* dst, const float* src, std::int64_t count, float beta, cudaStream_t stream);
/// y[n, c] = mean over hw of x[n, c, hw] (summed in double in a fixed order).
cudaError_t global_avg_forward(const float* x, float* y, std::int64_t n, std::int64_t c, std::int64_t hw,
                               cudaStream_t stream);
/// dx[n, c, hw] = dy[n, c] / hw + beta·dx.
cudaError_t global_avg_backward(const float* dy, float* dx, std::int64_t n, std::int64_t c, std::int64_t hw, float beta,
                                cudaStream_t stream);

}  // namespace dlsweep::trainer::kernels::cuda
