// orphans.hpp — processes of local trials whose orchestrator died: found by the trial
// directory in their environment (DLSWEEP_TRIAL_DIR, which the local backend sets for every
// trial it starts and which its children inherit), and stopped by process group. Local
// knowledge: LocalBackend::stop_orphans() is how `dlsweep resume` and `dlsweep cancel` reach it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <vector>

namespace dlsweep::sched {

/// Processes whose environment says they belong to this trial dir (DLSWEEP_TRIAL_DIR):
/// the trial program and anything it started. Reads /proc; skips what it cannot read.
std::vector<pid_t> find_trial_processes(const std::filesystem::path& trial_dir);

/// SIGTERM to each process and its group, then SIGKILL to what is left after `grace_s`.
/// Returns how many processes were found alive at the start.
std::size_t stop_processes(const std::vector<pid_t>& pids, double grace_s);

}  // namespace dlsweep::sched
