// cuda_info.hpp — what a CUDA build was compiled against and what the machine offers,
// without touching the GPU libraries' code (CUDA builds only; kernels_registry.cpp calls it
// under #if DLSWEEP_HAVE_CUDA). Links only the static CUDA runtime, so dlsweep-train does
// not load cuBLASLt, cuDNN or NCCL just to start.
#pragma once

#include <string>

namespace dlsweep::trainer::kernels::cuda {

/// "CUDA 13.0 (cuBLASLt 13.1.0, cuDNN 9.19.0, NCCL 2.28.9), archs sm_80 sm_90", from headers.
std::string build_versions();

/// Visible devices; 0 when there is no driver or no device (`why` says which).
int device_count(std::string* why = nullptr);

}  // namespace dlsweep::trainer::kernels::cuda
