// backend_kinds.hpp — the backends dlsweep knows, by the name a study gives them
// (`backend.kind`): what each can do, the keys of `backend:` it takes and how it reads and
// writes them (the kind's own code: slurm/study_options.hpp); registry.hpp builds them. Nothing
// outside schedulers/ compares a backend's name: it asks here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/option_reader.hpp"
#include "common/result.hpp"
#include "schedulers/backend_options.hpp"

namespace dlsweep::sched {

struct BackendKind {
  std::string_view name;
  /// How prose names where the kind's jobs are ("Slurm": "4 in Slurm, 6 waiting"); recorded
  /// with the events the backend causes, so readers outside schedulers/ say it as it is.
  std::string_view display_name;
  /// Jobs run on when the orchestrator dies, and resume follows them; false: they are the
  /// orchestrator's own processes, which resume stops before it relaunches their trials.
  bool jobs_outlive_orchestrator = false;
  /// A batch scheduler: trials run inside an allocation (`trial.launcher: srun`), and the
  /// orchestrator itself can run as a job (`submit --as-job`).
  bool batch_scheduler = false;
  /// The keys of `backend:` this kind takes besides kind, max_concurrent and pending_warn.
  std::span<const std::string_view> option_keys;
  /// The entries the backend writes in a study's directory (Slurm: "slurm", its batch
  /// scripts and index files): `delete --files` removes them as dlsweep's own.
  std::span<const std::string_view> study_dir_entries = {};
  /// Reads the kind's keys of a study's `backend:` section (those of option_keys it has)
  /// into `options`, each error at its key; nullptr: the kind takes no keys.
  void (*read_options)(OptionReader& section, BackendOptions& options, std::size_t max_concurrent) = nullptr;
  /// Writes back what read_options read (the keys that differ from their defaults).
  void (*write_options)(const BackendOptions& options, nlohmann::json& section) = nullptr;
  /// Can a trial with each of these rank counts (from the study key `where`; `launcher`
  /// as trial.launcher) run as the kind's options shape its job? The first problem, at `where`.
  std::optional<Error> (*check_ranks)(const BackendOptions& options, std::span<const std::int64_t> ranks,
                                      std::string_view launcher, const std::string& where) = nullptr;
  /// Every trial trains on a GPU (device: cuda at `where`): does the kind's request give its
  /// jobs one? The problem, at `where`.
  std::optional<Error> (*check_gpu_request)(const BackendOptions& options, const std::string& where) = nullptr;
};

/// Every kind, in registry order ("local", "slurm").
std::span<const BackendKind> backend_kinds();
/// The names of backend_kinds(), for validation and did-you-mean.
std::vector<std::string_view> backend_kind_names();
/// The kind called `name`, or nullptr.
const BackendKind* find_backend_kind(std::string_view name);
/// How prose names the kind called `name` ("Slurm"): its display_name, else `name` itself.
std::string_view backend_display_name(std::string_view name);
/// The kinds that take `key` (an option key of some kind), for "applies only to ..." errors.
std::vector<std::string_view> kinds_taking(std::string_view key);
/// Whether some backend kind writes an entry called `name` in a study's directory.
bool backend_owns_study_entry(std::string_view name);

}  // namespace dlsweep::sched
