// study_options.hpp — the Slurm backend's keys of a study file's `backend:` section, read,
// validated and written back by the backend itself: their names (backend_kinds.cpp lists
// them for the validator's did-you-mean), their types, their Slurm syntax and every message.
// study/ hands the section over through common/option_reader.hpp and keeps the result as the
// backend's own type (SlurmOptions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/option_reader.hpp"
#include "common/result.hpp"
#include "schedulers/slurm/options.hpp"

namespace dlsweep::sched::slurm {

/// Reads every Slurm key the section has into `o` (types first, then the Slurm syntax of the
/// whole: validate_study_options), each error at its key.
void read_study_options(OptionReader& r, SlurmOptions& o, std::size_t max_concurrent);

/// The keys of `o` that differ from the defaults, into `section` (what the database stores,
/// read back by read_study_options to an equal SlurmOptions). `driver` is always written.
void write_study_options(const SlurmOptions& o, nlohmann::json& section);

/// A trial of `ranks` ranks (each value; `launcher` as trial.launcher) against nodes and
/// ntasks_per_node: the first that cannot be placed, as an error at `where`.
std::optional<Error> check_ranks(const SlurmOptions& o, std::span<const std::int64_t> ranks, std::string_view launcher,
                                 const std::string& where);

/// Trials that all train on a GPU need the batch script to request one (gpus_per_task,
/// gpus_per_node, or a --gres/--gpus line in extra_sbatch); else an error at `where`.
std::optional<Error> check_gpu_request(const SlurmOptions& o, const std::string& where);

}  // namespace dlsweep::sched::slurm
