// arena_kernels.hpp — launchers of the whole-arena operations behind the CUDA backend's
// kernels::Memory (arena_kernels.cu). Plain C++17 (nvcc and the host code include it);
// asynchronous on `stream`, nothing allocated.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace dlsweep::trainer::kernels::cuda {

/// Upper bound of sum_squares_blocks(): the partial buffer holds this many doubles.
inline constexpr int kSumSquaresMaxBlocks = 1024;
/// Blocks (partials) sum_squares uses for n floats: a function of n alone, so the order of
/// the additions, and the result, are the same on every call and every GPU.
int sum_squares_blocks(std::int64_t n);
/// out_dev[0] = Σ x² in double (two passes; `partial_dev` holds kSumSquaresMaxBlocks doubles).
cudaError_t sum_squares(const float* x_dev, std::int64_t n, double* partial_dev, double* out_dev, cudaStream_t stream);
/// y += x.
cudaError_t add(float* y_dev, const float* x_dev, std::int64_t n, cudaStream_t stream);
/// y *= a.
cudaError_t scale(float* y_dev, float a, std::int64_t n, cudaStream_t stream);

}  // namespace dlsweep::trainer::kernels::cuda
