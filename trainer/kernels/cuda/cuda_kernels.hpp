// cuda_kernels.hpp — the CUDA compute backend ("cuda"): one GPU (chosen by the rank's local
// rank, device_select.hpp), one stream, one cuBLASLt handle. Arenas in device memory
// (CudaMemory), networks through cuBLASLt and cuDNN (CudaNet), the batch gather (CudaData),
// the loss and the optimizers through dlsweep's own kernels. Built into the plugin libdlsweep-cuda.so (cuda_plugin.cpp),
// which dlsweep-train loads only when a run asks for device cuda/auto, so a CUDA build still
// starts on a node without the CUDA libraries.
#pragma once

#include <memory>
#include <string>

#include "common/result.hpp"
#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

/// The backend on this rank's GPU; an error (kind resources) when there is none.
Result<std::unique_ptr<Kernels>> make_cuda_kernels();

}  // namespace dlsweep::trainer::kernels::cuda
