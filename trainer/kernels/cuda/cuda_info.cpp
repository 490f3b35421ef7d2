#include "trainer/kernels/cuda/cuda_info.hpp"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn_version.h>
#include <nccl.h>

#include <fmt/format.h>

#include "trainer/comm/nccl_bootstrap.hpp"

static_assert(NCCL_UNIQUE_ID_BYTES == dlsweep::trainer::comm::kNcclIdBytes,
              "nccl_bootstrap.hpp's id size must match nccl.h");

namespace dlsweep::trainer::kernels::cuda {

std::string build_versions() {
  return fmt::format("CUDA {}.{} (cuBLASLt {}.{}.{}, cuDNN {}.{}.{}, NCCL {}.{}.{}), archs {}", CUDART_VERSION / 1000,
                     CUDART_VERSION % 1000 / 10, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH, CUDNN_MAJOR,
                     CUDNN_MINOR, CUDNN_PATCHLEVEL, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, DLSWEEP_CUDA_ARCHS);
}

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = fmt::format("{} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
    (void)cudaGetLastError();  // clear the sticky-free error state
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device";
  return n;
}

}  // namespace dlsweep::trainer::kernels::cuda
