#include "trainer/kernels/plugin_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainer/kernels/cuda/cuda_plugin.hpp"

namespace dlsweep::trainer::kernels {

namespace fs = std::filesystem;

namespace {

using MakeFn = void (*)(Result<std::unique_ptr<Kernels>>*);
using AbiFn = int (*)();

struct Loaded {
  MakeFn make = nullptr;
  std::string error;  ///< why it could not be loaded
};

const Loaded& load_once() {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<fs::path> candidates;
    if (const char* env = std::getenv("DLSWEEP_CUDA_PLUGIN"); env && *env) candidates.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      candidates.push_back(exe.parent_path() / cuda::kPluginFile);
      candidates.push_back(exe.parent_path().parent_path() / "lib" / "dlsweep" / cuda::kPluginFile);
    }
    std::string tried;
    for (const auto& c : candidates) {
      tried += (tried.empty() ? "" : ", ") + c.string();
      if (!fs::exists(c, ec)) continue;
      void* h = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        loaded.error = fmt::format("cannot load {}: {}", c.string(), ::dlerror());
        return;
      }
      auto abi = reinterpret_cast<AbiFn>(::dlsym(h, "dlsweep_cuda_plugin_abi"));
      auto make = reinterpret_cast<MakeFn>(::dlsym(h, "dlsweep_cuda_make_kernels"));
      if (!abi || !make || abi() != cuda::kPluginAbi) {
        loaded.error = fmt::format("{} is not this dlsweep-train's CUDA plugin (another version?)", c.string());
        return;
      }
      loaded.make = make;
      return;
    }
    loaded.error = fmt::format("the CUDA plugin {} is not installed (looked at: {})", cuda::kPluginFile, tried);
  });
  return loaded;
}

}  // namespace

bool cuda_build() {
#if DLSWEEP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

Result<std::unique_ptr<Kernels>> load_cuda_kernels() {
  if (!cuda_build())
    return fail_as(ErrorKind::resources, "this dlsweep-train was built without CUDA, so device cuda cannot run",
                   "device", "use a CUDA build (nvcc, cuDNN 9 and NCCL found at configure time) or device: cpu");
  const Loaded& l = load_once();
  if (!l.make)
    return fail_as(ErrorKind::resources, "device cuda cannot run: " + l.error, "device",
                   "install the CUDA runtime libraries (libcublasLt) on this node, set DLSWEEP_CUDA_PLUGIN to the "
                   "plugin's path, or use device: cpu");
  Result<std::unique_ptr<Kernels>> out = fail("unset");
  l.make(&out);
  return out;
}

}  // namespace dlsweep::trainer::kernels
