// cuda_plugin.hpp — the contract between dlsweep-train and libdlsweep-cuda.so (cuda_plugin.cpp):
// two C symbols, an ABI number that both sides compile in (bump it whenever a class the
// plugin shares with the executable changes shape), and the factory.
#pragma once

namespace dlsweep::trainer::kernels::cuda {

inline constexpr int kPluginAbi = 1;
inline constexpr const char* kPluginFile = "libdlsweep-cuda.so";

}  // namespace dlsweep::trainer::kernels::cuda
