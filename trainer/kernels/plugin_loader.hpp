// plugin_loader.hpp — finds and loads the CUDA backend plugin (libdlsweep-cuda.so,
// kernels/cuda/cuda_plugin.cpp) for kernels_registry.cpp. Looked for, first found wins:
// $DLSWEEP_CUDA_PLUGIN (a file), then beside the running executable, then in
// <executable dir>/../lib/dlsweep/. Loaded once per process; never unloaded.
#pragma once

#include <memory>

#include "common/result.hpp"
#include "trainer/kernels/kernels.hpp"

namespace dlsweep::trainer::kernels {

/// True when this build was configured with CUDA (the plugin was built beside it).
bool cuda_build();

/// The CUDA backend on this rank's GPU, through the plugin. Errors (kind resources) say
/// whether the build has no CUDA, the plugin is missing or does not load (the dynamic
/// loader's message: usually a missing libcublasLt), or no GPU answers.
Result<std::unique_ptr<Kernels>> load_cuda_kernels();

}  // namespace dlsweep::trainer::kernels
