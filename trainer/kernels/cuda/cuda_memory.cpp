#include "trainer/kernels/cuda/cuda_memory.hpp"

#include <cstring>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "trainer/kernels/cuda/arena_kernels.hpp"
#include "trainer/kernels/cuda/device_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  if (e == cudaErrorMemoryAllocation)
    throw std::bad_alloc();  // main() says "out of memory (fix: a smaller batch_size or model)"
  throw std::runtime_error(fmt::format("cuda: {}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}

CudaMemory::CudaMemory(int device, cudaStream_t stream) : device_(device), stream_(stream) {
  check(cudaMalloc(reinterpret_cast<void**>(&partial_), (kSumSquaresMaxBlocks + 1) * sizeof(double)), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&found_), sizeof(int)), "cudaMalloc");
}

CudaMemory::~CudaMemory() {
  cudaFree(partial_);
  cudaFree(found_);
}

DeviceArray CudaMemory::allocate(std::int64_t n) {
  if (n <= 0) return DeviceArray(this, nullptr, 0);
  float* p = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&p), static_cast<std::size_t>(n) * sizeof(float)), "cudaMalloc");
  check(cudaMemsetAsync(p, 0, static_cast<std::size_t>(n) * sizeof(float), stream_), "cudaMemsetAsync");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return DeviceArray(this, p, n);
}

void CudaMemory::release(float* p) noexcept {
  cudaStreamSynchronize(stream_);  // no kernel may still use it
  cudaFree(p);
}

std::shared_ptr<float[]> CudaMemory::allocate_staging(std::int64_t n) {
  const std::size_t bytes = static_cast<std::size_t>(n > 0 ? n : 1) * sizeof(float);
  float* p = nullptr;
  check(cudaMallocHost(reinterpret_cast<void**>(&p), bytes), "cudaMallocHost (staging)");
  std::memset(p, 0, bytes);
  return std::shared_ptr<float[]>(p, [](float* q) { cudaFreeHost(q); });
}

void CudaMemory::upload(float* dst, const float* src, std::int64_t n) {
  if (n <= 0) return;
  check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(float), cudaMemcpyHostToDevice, stream_),
        "upload");
  check(cudaStreamSynchronize(stream_), "upload");
}

void CudaMemory::download(float* dst, const float* src, std::int64_t n) {
  if (n <= 0) return;
  check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost, stream_),
        "download");
  check(cudaStreamSynchronize(stream_), "download");
}

void CudaMemory::copy(float* dst, const float* src, std::int64_t n) {
  if (n <= 0 || dst == src) return;
  check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
        "copy");
}

double CudaMemory::sum_squares(const float* x, std::int64_t n) {
  if (n <= 0) return 0;
  double* out = partial_ + kSumSquaresMaxBlocks;
  check(cuda::sum_squares(x, n, partial_, out, stream_), "sum_squares");
  double h = 0;
  check(cudaMemcpyAsync(&h, out, sizeof(double), cudaMemcpyDeviceToHost, stream_), "sum_squares");
  check(cudaStreamSynchronize(stream_), "sum_squares");
  return h;
}

void CudaMemory::add(float* y, const float* x, std::int64_t n) { check(cuda::add(y, x, n, stream_), "add"); }

void CudaMemory::scale(float* y, float a, std::int64_t n) { check(cuda::scale(y, a, n, stream_), "scale"); }

bool CudaMemory::any_nonfinite(const float* x, std::int64_t n) {
  if (n <= 0) return false;
  check(cudaMemsetAsync(found_, 0, sizeof(int), stream_), "any_nonfinite");
  check(find_nonfinite(x, n, found_, stream_), "any_nonfinite");
  int h = 0;
  check(cudaMemcpyAsync(&h, found_, sizeof(int), cudaMemcpyDeviceToHost, stream_), "any_nonfinite");
  check(cudaStreamSynchronize(stream_), "any_nonfinite");
  return h != 0;
}

}  // namespace dlsweep::trainer::kernels::cuda
