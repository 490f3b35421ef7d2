// backend_kinds.cpp — the kinds and their traits (backend_kinds.hpp).
#include "schedulers/backend_kinds.hpp"

#include "schedulers/slurm/study_options.hpp"

#include <algorithm>

namespace dlsweep::sched {

namespace {

constexpr std::string_view kSlurmKeys[] = {
    "driver", "slurm_conf", "partition", "account", "qos", "time", "nodes", "ntasks_per_node", "cpus_per_task",
    "gpus_per_node", "mem", "constraint", "extra_sbatch", "setup", "template", "signal_lead_s", "requeue",
    "poll_min_s", "poll_max_s", "gpus_per_task", "cpus_per_gpu", "gpu_bind", "cpu_bind", "mpi", "workers", "worker_idle_s", "keep_imported"};

// The Slurm backend's batch scripts and index files (SlurmOptions::script_dir, set by the
// registry to <study dir>/slurm).
constexpr std::string_view kSlurmEntries[] = {"slurm"};

void read_slurm(OptionReader& r, BackendOptions& o, std::size_t max_concurrent) {
  slurm::read_study_options(r, o.slurm, max_concurrent);
}
void write_slurm(const BackendOptions& o, nlohmann::json& b) { slurm::write_study_options(o.slurm, b); }
std::optional<Error> slurm_ranks(const BackendOptions& o, std::span<const std::int64_t> ranks, std::string_view launcher,
                                 const std::string& where) {
  return slurm::check_ranks(o.slurm, ranks, launcher, where);
}
std::optional<Error> slurm_gpus(const BackendOptions& o, const std::string& where) {
  return slurm::check_gpu_request(o.slurm, where);
}

constexpr std::string_view kLocalKeys[] = {"keep_imported"};

void read_local(OptionReader& r, BackendOptions& o, std::size_t) {
  if (r.has("keep_imported"))
    if (auto v = r.boolean("keep_imported")) o.local.keep_imported = *v;
}
void write_local(const BackendOptions& o, nlohmann::json& b) {
  if (o.local.keep_imported) b["keep_imported"] = true;
}

constexpr BackendKind kKinds[] = {
    {"local", "local processes", /*jobs_outlive_orchestrator=*/false, /*batch_scheduler=*/false, kLocalKeys, {}, read_local, write_local,
     nullptr, nullptr},
    {"slurm", "Slurm", /*jobs_outlive_orchestrator=*/true, /*batch_scheduler=*/true, kSlurmKeys, kSlurmEntries, read_slurm,
     write_slurm, slurm_ranks, slurm_gpus},
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

std::string_view backend_display_name(std::string_view name) {
  const BackendKind* k = find_backend_kind(name);
  return k ? std::string_view(k->display_name) : name;
}

std::vector<std::string_view> kinds_taking(std::string_view key) {
  std::vector<std::string_view> out;
  for (const auto& k : kKinds)
    if (std::find(k.option_keys.begin(), k.option_keys.end(), key) != k.option_keys.end()) out.push_back(k.name);
  return out;
}

}  // namespace dlsweep::sched
