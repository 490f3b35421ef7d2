// data_kernels.cu — gather_rows (data_kernels.hpp): one block per row.
#include "trainer/kernels/cuda/data_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void gather_kernel(DeviceSet set, const std::uint32_t* idx, std::int64_t first, float* x, std::int64_t ld,
                              std::int32_t* labels) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t i = idx ? static_cast<std::int64_t>(idx[r]) : first + r;
  float* out = x + r * ld;
  if (set.pixels) {
    const std::uint8_t* p = set.pixels + i * set.features;
    for (std::int64_t j = threadIdx.x; j < set.features; j += kThreads) out[j] = set.lut[p[j]];
  } else {
    const float* p = set.images + i * set.features;
    for (std::int64_t j = threadIdx.x; j < set.features; j += kThreads) out[j] = p[j];
  }
  if (threadIdx.x == 0) labels[r] = set.labels[i];
}

}  // namespace

cudaError_t gather_rows(const DeviceSet& set, const std::uint32_t* idx_dev, std::int64_t first, std::int64_t n,
                        float* x_dev, std::int64_t ld, std::int32_t* labels_dev, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  gather_kernel<<<static_cast<unsigned>(n), kThreads, 0, stream>>>(set, idx_dev, first, x_dev, ld, labels_dev);
  return cudaGetLastError();
}

}  // namespace dlsweep::trainer::kernels::cuda
