// cuda_plugin.hpp — the contract between dlsweep-train and libdlsweep-cuda.so (cuda_plugin.cpp):
// three C symbols and the factory.
//   dlsweep_cuda_plugin_fingerprint()  the interface fingerprint the plugin was compiled with:
//       a hash of every header whose classes cross the boundary, generated at build time
//       (cmake/plugin_fingerprint.cmake; "trainer/kernels/plugin_fingerprint.hpp" in the build
//       tree), compiled into both sides; plugin_loader.cpp refuses a plugin whose fingerprint
//       is not its own (kernels/plugin_identity.hpp words the refusal);
//   dlsweep_cuda_plugin_build()        which build it came from (version, commit, build dir);
//   dlsweep_cuda_make_kernels(out)     the backend.
// A plugin from before fingerprints exports dlsweep_cuda_plugin_abi() instead (refused).
#pragma once

namespace dlsweep::trainer::kernels::cuda {

inline constexpr const char* kPluginFile = "libdlsweep-cuda.so";

}  // namespace dlsweep::trainer::kernels::cuda
