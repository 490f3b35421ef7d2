// backend_kinds.hpp — the backends dlsweep knows, by the name a study gives them
// (`backend.kind`): what each can do and the keys of `backend:` it takes. Pure data: the
// study validator reads it without linking any backend; registry.hpp builds them. Nothing
// outside schedulers/ compares a backend's name: it asks here.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace dlsweep::sched {

struct BackendKind {
  std::string_view name;
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
};

/// Every kind, in registry order ("local", "slurm").
std::span<const BackendKind> backend_kinds();
/// The names of backend_kinds(), for validation and did-you-mean.
std::vector<std::string_view> backend_kind_names();
/// The kind called `name`, or nullptr.
const BackendKind* find_backend_kind(std::string_view name);
/// The kinds that take `key` (an option key of some kind), for "applies only to ..." errors.
std::vector<std::string_view> kinds_taking(std::string_view key);
/// Whether some backend kind writes an entry called `name` in a study's directory.
bool backend_owns_study_entry(std::string_view name);

}  // namespace dlsweep::sched
