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

/// `study_root` is <runs_dir>/<study>: Slurm scripts and index files go to study_root/slurm.
/// Relative paths in the study (backend.template) are relative to the study file's folder.
Result<std::unique_ptr<sched::Backend>> make_backend(boost::asio::io_context& io, const StudySpec& spec,
                                                     const std::filesystem::path& study_root);

}  // namespace dlsweep::orch
