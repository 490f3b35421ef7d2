// plugin_identity.hpp — whether a loaded libdlsweep-cuda.so was built against this
// dlsweep-train's interface, and the words of the refusal when not. Pure (plugin_loader.cpp
// reads the identities: its own compiled in, the plugin's through dlsym).
//
// An identity is the interface fingerprint (cmake/plugin_fingerprint.cmake: a hash of the
// headers whose classes cross the plugin boundary) and the build it came from ("dlsweep 0.1.0,
// commit ..., Release build in /path"). Plugins match exactly when the fingerprints are equal;
// the builds only help the reader find the two trees.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace dlsweep::trainer::kernels {

struct PluginIdentity {
  std::string fingerprint;
  std::string build;
};

/// This dlsweep-train's identity (the generated header compiled into plugin_loader.cpp).
PluginIdentity this_build_identity();

/// OK when `plugin` (read from the file at `path`; nullopt when it exports no fingerprint: a
/// plugin from before fingerprints) has `ours`'s fingerprint. Otherwise an error (kind
/// resources: another node or install may have the right one) naming the file, both
/// fingerprints and both builds, with the fix.
Status check_plugin_identity(const PluginIdentity& ours, const std::optional<PluginIdentity>& plugin,
                             std::string_view path);

}  // namespace dlsweep::trainer::kernels
