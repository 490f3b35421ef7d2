// registry.hpp — builds the backend a study names, like search::make_sampler: each kind of
// backend_kinds.hpp with its constructor. The one place that knows the concrete backends.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "common/asio.hpp"
#include "common/result.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/backend_kinds.hpp"
#include "schedulers/backend_options.hpp"

namespace dlsweep::sched {

/// What a backend is built from: the study's `backend:` section, read and validated.
struct BackendConfig {
  std::string kind = "local";
  std::size_t max_concurrent = 1;
  BackendOptions options;  ///< the kinds' own keys as the study gives them
  /// The study's directory of runs (<runs_dir>/<study>): a backend keeps its own files
  /// under it (Slurm: <study_root>/slurm, see BackendKind::study_dir_entries).
  std::filesystem::path study_root;
  /// The study file's directory: relative paths of the study (Slurm's template) are its.
  std::filesystem::path study_dir;
  /// Create the backend's own directories (Slurm's script_dir); false for a dry run, which
  /// creates nothing.
  bool create_dirs = true;
};

/// Builds the backend `config.kind` names; an unknown kind is an error naming the known ones.
Result<std::unique_ptr<Backend>> make_backend(boost::asio::io_context& io, const BackendConfig& config);

}  // namespace dlsweep::sched
