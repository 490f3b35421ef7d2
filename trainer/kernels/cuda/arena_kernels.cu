// arena_kernels.cu — the whole-arena operations of kernels::Memory on the device
// (cuda_memory.cpp): Σ x² in double with a deterministic order, y += x, y *= a.
// Compiled with --fmad=false like the other kernels.
#include "trainer/kernels/cuda/arena_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// Stage 1: block b sums the squares of its grid-stride elements (a fixed pattern for a given
// n and block count), then reduces its threads in a fixed tree; partial[b] holds the result.
__global__ void sum_squares_partial(const float* __restrict__ x, std::int64_t n, double* __restrict__ partial) {
  __shared__ double sh[kThreads];
  double acc = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * kThreads) {
    const double v = x[i];
    acc += v * v;
  }
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

// Stage 2: one block adds the partials in a fixed tree.
__global__ void sum_partials(const double* __restrict__ partial, int count, double* __restrict__ out) {
  __shared__ double sh[kThreads];
  double acc = 0;
  for (int i = threadIdx.x; i < count; i += kThreads) acc += partial[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = sh[0];
}

__global__ void add_kernel(float* __restrict__ y, const float* __restrict__ x, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = y[i] + x[i];
}

__global__ void scale_kernel(float* __restrict__ y, float a, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = y[i] * a;
}

unsigned blocks_for(std::int64_t n, std::int64_t cap) {
  std::int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > cap) b = cap;
  return static_cast<unsigned>(b);
}

}  // namespace

int sum_squares_blocks(std::int64_t n) { return static_cast<int>(blocks_for((n + 15) / 16, kSumSquaresMaxBlocks)); }

cudaError_t sum_squares(const float* x_dev, std::int64_t n, double* partial_dev, double* out_dev, cudaStream_t stream) {
  const int blocks = sum_squares_blocks(n);
  sum_squares_partial<<<blocks, kThreads, 0, stream>>>(x_dev, n, partial_dev);
  sum_partials<<<1, kThreads, 0, stream>>>(partial_dev, blocks, out_dev);
  return cudaGetLastError();
}

cudaError_t add(float* y_dev, const float* x_dev, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  add_kernel<<<blocks_for(n, 4096), kThreads, 0, stream>>>(y_dev, x_dev, n);
  return cudaGetLastError();
}

cudaError_t scale(float* y_dev, float a, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  scale_kernel<<<blocks_for(n, 4096), kThreads, 0, stream>>>(y_dev, a, n);
  return cudaGetLastError();
}

}  // namespace dlsweep::trainer::kernels::cuda
