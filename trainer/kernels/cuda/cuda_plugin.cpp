// cuda_plugin.cpp — the entry point of libdlsweep-cuda.so, the CUDA backend as a plugin that
// kernels_registry.cpp loads with dlopen when a run asks for device cuda (or auto). The
// plugin links cuBLASLt and the CUDA runtime; dlsweep-train itself does not, so a CUDA build
// starts on any node. The plugin resolves the trainer's own symbols from the executable
// (dlsweep-train is linked with ENABLE_EXPORTS), so both share one copy of every class: the
// interface fingerprint (cuda_plugin.hpp) says whether they agree on those classes.
#include "trainer/kernels/cuda/cuda_kernels.hpp"
#include "trainer/kernels/cuda/cuda_plugin.hpp"
#include "trainer/kernels/plugin_fingerprint.hpp"

extern "C" const char* dlsweep_cuda_plugin_fingerprint() { return DLSWEEP_PLUGIN_FINGERPRINT; }

extern "C" const char* dlsweep_cuda_plugin_build() { return DLSWEEP_PLUGIN_BUILD; }

extern "C" void dlsweep_cuda_make_kernels(dlsweep::Result<std::unique_ptr<dlsweep::trainer::kernels::Kernels>>* out) {
  *out = dlsweep::trainer::kernels::cuda::make_cuda_kernels();
}
