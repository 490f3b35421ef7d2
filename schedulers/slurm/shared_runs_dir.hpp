// shared_runs_dir.hpp — is a Slurm study's runs directory somewhere the compute nodes can
// see? Trial directories (params.json, metrics.jsonl, checkpoints) are written by the job
// on its node and read by the orchestrator on the login node, so they must live on a
// filesystem both mount (home, /scratch, Lustre/GPFS/NFS). A path under /tmp, /var/tmp,
// /dev/shm or /run, or on tmpfs/ramfs, is each machine's own: the job would write into the
// node's /tmp and the orchestrator would wait forever for a file it cannot see.
//
// The one setup where such a path works is a "cluster" whose nodes all are this machine
// (the project's own scripts/slurm-local.sh, a workstation running slurmd): every node's
// NodeAddr/NodeHostname then names this host (localhost, 127.x, ::1, our hostname).
//
// Pure parts (node_local_reason, nodes_all_local) apart from the I/O (check_runs_dir).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/result.hpp"

namespace dlsweep::sched::slurm {

/// Why `path` (absolute, normalised) on a filesystem of type `fs_magic` (statfs f_type; 0
/// when unknown) is private to one machine; nullopt when it may be shared.
std::optional<std::string> node_local_reason(const std::filesystem::path& path, long fs_magic);

/// `sinfo -h -N -o "%o %n"` output (NodeAddr NodeHostname per line): true when there is at
/// least one node and every address or hostname is one of `local_names` or a loopback
/// address.
bool nodes_all_local(const std::string& sinfo_output, const std::set<std::string>& local_names);

/// The names this machine answers to: localhost, its hostname and that name's first label.
std::set<std::string> this_host_names();

/// Refuses a node-local runs_dir unless every node of `partition` ("" = all) is this
/// machine; `slurm_env` is the environment for sinfo (SLURM_CONF). The error names
/// runs_dir and the fix.
Status check_runs_dir(const std::filesystem::path& runs_dir, const std::string& partition,
                      const std::map<std::string, std::string>& slurm_env);

}  // namespace dlsweep::sched::slurm
