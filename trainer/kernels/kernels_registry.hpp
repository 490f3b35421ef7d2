// kernels_registry.hpp — the one place that knows which compute backends exist and how the
// process-wide compute thread count is set. Backends behind optional dependencies (cuDNN)
// will be added here under #if, nowhere else.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels {

/// Names accepted by make_kernels(), preferred first.
std::vector<std::string> available_kernels();

/// Creates a backend by name ("onednn", "reference", or "cuda": the GPU plugin, CUDA builds).
Result<std::unique_ptr<Kernels>> make_kernels(std::string_view name);

/// Sets the number of compute threads for oneDNN and the trainer's own parallel loops
/// (both run on the OpenMP runtime that Debian's libdnnl is built with). Call before
/// building kernels: oneDNN partitions work when a primitive is created.
void set_compute_threads(int threads);
/// The current setting.
int compute_threads();

/// oneDNN's version and CPU runtime, e.g. "oneDNN 2.6.3 (cpu runtime OpenMP)"; in a CUDA
/// build followed by "; built with CUDA 13.0 (cuBLASLt ..., cuDNN ..., NCCL ...), archs ...".
std::string backend_version();

}  // namespace dlsweep::trainer::kernels
