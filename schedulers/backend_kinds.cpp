// backend_kinds.cpp — the kinds and their traits (backend_kinds.hpp).
#include "schedulers/backend_kinds.hpp"

#include <algorithm>

namespace dlsweep::sched {

namespace {

constexpr std::string_view kSlurmKeys[] = {
    "driver", "slurm_conf", "partition", "account", "qos", "time", "nodes", "ntasks_per_node", "cpus_per_task",
    "gpus_per_node", "mem", "constraint", "extra_sbatch", "setup", "template", "signal_lead_s", "requeue",
    "poll_min_s", "poll_max_s", "gpus_per_task", "cpus_per_gpu", "gpu_bind", "cpu_bind", "mpi"};

// The Slurm backend's batch scripts and index files (SlurmOptions::script_dir, set by the
// registry to <study dir>/slurm).
constexpr std::string_view kSlurmEntries[] = {"slurm"};

constexpr BackendKind kKinds[] = {
    {"local", /*jobs_outlive_orchestrator=*/false, /*batch_scheduler=*/false, {}, {}},
    {"slurm", /*jobs_outlive_orchestrator=*/true, /*batch_scheduler=*/true, kSlurmKeys, kSlurmEntries},
};

}  // namespace

std::span<const BackendKind> backend_kinds() { return kKinds; }

bool backend_owns_study_entry(std::string_view name) {
  for (const auto& k : kKinds)
    for (auto e : k.study_dir_entries)
      if (e == name) return true;
  return false;
}

std::vector<std::string_view> backend_kind_names() {
  std::vector<std::string_view> out;
  for (const auto& k : kKinds) out.push_back(k.name);
  return out;
}

const BackendKind* find_backend_kind(std::string_view name) {
  for (const auto& k : kKinds)
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string_view> kinds_taking(std::string_view key) {
  std::vector<std::string_view> out;
  for (const auto& k : kKinds)
    if (std::find(k.option_keys.begin(), k.option_keys.end(), key) != k.option_keys.end()) out.push_back(k.name);
  return out;
}

}  // namespace dlsweep::sched
