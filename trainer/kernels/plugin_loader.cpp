#include "trainer/kernels/plugin_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trainer/kernels/cuda/cuda_plugin.hpp"
#include "trainer/kernels/plugin_fingerprint.hpp"
#include "trainer/kernels/plugin_identity.hpp"

namespace dlsweep::trainer::kernels {

namespace fs = std::filesystem;

namespace {

using MakeFn = void (*)(Result<std::unique_ptr<Kernels>>*);
using TextFn = const char* (*)();

struct Loaded {
  MakeFn make = nullptr;
  std::string error;             ///< why it could not be loaded
  std::optional<Error> refused;  ///< a plugin of another interface (plugin_identity.hpp)
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
      auto fingerprint = reinterpret_cast<TextFn>(::dlsym(h, "dlsweep_cuda_plugin_fingerprint"));
      auto build = reinterpret_cast<TextFn>(::dlsym(h, "dlsweep_cuda_plugin_build"));
      auto make = reinterpret_cast<MakeFn>(::dlsym(h, "dlsweep_cuda_make_kernels"));
      std::optional<PluginIdentity> theirs;
      if (fingerprint) theirs = PluginIdentity{fingerprint(), build ? build() : ""};
      if (auto s = check_plugin_identity(this_build_identity(), theirs, c.string()); !s) {
        loaded.refused = s.error();
        return;
      }
      if (!make) {
        loaded.error = fmt::format("{} has no dlsweep_cuda_make_kernels", c.string());
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

PluginIdentity this_build_identity() { return {DLSWEEP_PLUGIN_FINGERPRINT, DLSWEEP_PLUGIN_BUILD}; }

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
  if (l.refused) return std::unexpected(*l.refused);
  if (!l.make)
    return fail_as(ErrorKind::resources, "device cuda cannot run: " + l.error, "device",
                   "install the CUDA runtime libraries (libcublasLt) on this node, set DLSWEEP_CUDA_PLUGIN to the "
                   "plugin's path, or use device: cpu");
  Result<std::unique_ptr<Kernels>> out = fail("unset");
  l.make(&out);
  return out;
}

}  // namespace dlsweep::trainer::kernels
