#include "trainer/kernels/kernels_registry.hpp"

#include <omp.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/kernels/onednn/onednn_kernels.hpp"
#include "trainer/kernels/plugin_loader.hpp"
#include "trainer/kernels/reference/reference_kernels.hpp"
#if DLSWEEP_HAVE_CUDA
#include "trainer/kernels/cuda/cuda_info.hpp"
#endif

namespace dlsweep::trainer::kernels {

std::vector<std::string> available_kernels() { return {"onednn", "reference"}; }

Result<std::unique_ptr<Kernels>> make_kernels(std::string_view name) {
  if (name == "onednn") {
    try {
      return std::unique_ptr<Kernels>(std::make_unique<OnednnKernels>());
    } catch (const dnnl::error& e) {
      return fail_as(ErrorKind::resources, fmt::format("cannot create the oneDNN CPU engine: {}", e.what()), "kernels",
                  "check the oneDNN installation (libdnnl)");
    }
  }
  if (name == "reference") return std::unique_ptr<Kernels>(std::make_unique<ReferenceKernels>());
  if (name == "cuda") return load_cuda_kernels();
  return fail_as(ErrorKind::bad_input, fmt::format("unknown compute backend '{}'", name), "kernels",
              fmt::format("use one of: {}", fmt::join(available_kernels(), ", ")));
}

void set_compute_threads(int threads) { omp_set_num_threads(threads < 1 ? 1 : threads); }

int compute_threads() { return omp_get_max_threads(); }

std::string backend_version() {
  const dnnl_version_t* v = dnnl::version();
  const char* rt = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP"
                   : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                   : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                                                        : "other";
  std::string text = fmt::format("oneDNN {}.{}.{} (cpu runtime {})", v->major, v->minor, v->patch, rt);
#if DLSWEEP_HAVE_CUDA
  // The GPU backend is the plugin libdlsweep-cuda.so (plugin_loader.hpp), loaded on demand.
  text += fmt::format("; built with {}", cuda::build_versions());
#endif
  return text;
}

}  // namespace dlsweep::trainer::kernels
