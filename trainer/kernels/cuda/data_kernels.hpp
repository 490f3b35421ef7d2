// data_kernels.hpp — the batch gather on the device (data_kernels.cu), for CudaData: row r of
// x gets sample idx[r] (or first + r when idx_dev is null) as floats, label too. Byte-backed
// datasets (Fashion-MNIST) map each byte through the 256-entry table `lut`, exactly as
// data::Dataset::copy_sample does; float datasets are copied. Padding columns of x are not
// written (they stay zero). Asynchronous on `stream`, nothing allocated.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace dlsweep::trainer::kernels::cuda {

struct DeviceSet {
  const std::uint8_t* pixels = nullptr;  ///< [size, features] bytes, or null
  const float* lut = nullptr;            ///< [256] when pixels
  const float* images = nullptr;         ///< [size, features] floats when not pixels
  const std::int32_t* labels = nullptr;  ///< [size]
  std::int64_t features = 0;
};

cudaError_t gather_rows(const DeviceSet& set, const std::uint32_t* idx_dev, std::int64_t first, std::int64_t n,
                        float* x_dev, std::int64_t ld, std::int32_t* labels_dev, cudaStream_t stream);

}  // namespace dlsweep::trainer::kernels::cuda
