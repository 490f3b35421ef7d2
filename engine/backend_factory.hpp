// backend_factory.hpp — builds the Backend a study names (`backend.kind`). The one place
// the orchestrator knows the concrete backends.
#pragma once

#include <filesystem>
#include <memory>

#include "common/asio.hpp"
#include "common/result.hpp"
#include "study/spec.hpp"
#include "schedulers/backend.hpp"

namespace dlsweep::orch {

/// `study_root` is <runs_dir>/<study>: Slurm scripts and index files go to study_root/slurm
/// (created unless `create_dirs` is false: a dry run creates nothing there).
/// Relative paths in the study (backend.template) are relative to the study file's folder.
Result<std::unique_ptr<sched::Backend>> make_backend(boost::asio::io_context& io, const StudySpec& spec,
                                                     const std::filesystem::path& study_root, bool create_dirs = true);

}  // namespace dlsweep::orch
