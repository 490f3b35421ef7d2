#include "trainer/kernels/plugin_identity.hpp"

#include <fmt/format.h>

namespace dlsweep::trainer::kernels {

Status check_plugin_identity(const PluginIdentity& ours, const std::optional<PluginIdentity>& plugin,
                             std::string_view path) {
  const std::string fix = fmt::format(
      "use the plugin built with this dlsweep-train (rebuild both from one tree: the targets dlsweep-train and "
      "dlsweep-cuda), or set DLSWEEP_CUDA_PLUGIN to it; this dlsweep-train is {}",
      ours.build);
  if (!plugin)
    return fail_as(ErrorKind::resources,
                   fmt::format("{} is not this dlsweep-train's CUDA plugin: it has no interface fingerprint (a build "
                               "from before fingerprints); this dlsweep-train's interface is {} ({})",
                               path, ours.fingerprint, ours.build),
                   "device", fix);
  if (plugin->fingerprint == ours.fingerprint) return {};
  return fail_as(ErrorKind::resources,
                 fmt::format("{} was built against another interface: plugin fingerprint {} ({}), this "
                             "dlsweep-train's {} ({})",
                             path, plugin->fingerprint.empty() ? "(empty)" : plugin->fingerprint,
                             plugin->build.empty() ? "build unknown" : plugin->build, ours.fingerprint, ours.build),
                 "device", fix);
}

}  // namespace dlsweep::trainer::kernels
