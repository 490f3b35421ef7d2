// pool_lease.hpp — what a pilot worker looks at before it reruns a trial whose earlier run
// ended unseen (pool_rerun.hpp decides from it): the earlier run's lease, and its process
// group on this host.
//
// A run's lease is a file (w/<wid>/<tag>.lease) that the worker opens and locks with an
// exclusive flock(2) just before it starts the trial, without close-on-exec: the trial's
// processes inherit the open file, and with it the lock, which is the open file's, not a
// process's. The worker closes its own copy once the trial is started, so the lock is held
// exactly as long as one process of the run still has it open: SIGKILL of the worker, its
// wrapper, or both, leaves it held by the trial's processes, and it is free once the last of
// them is gone, whatever killed them and whatever the cluster's process tracking (Slurm's
// proctrack/linuxproc loses processes whose parent died). Another process that tries the lock
// learns "held" or "free" — on any node, where the shared filesystem's locks reach across
// nodes (NFSv4, Lustre mounted with `flock`, GPFS); where they do not (Lustre `localflock`
// or `noflock`) flock fails or is local, and only the process group on the same host is
// checkable.
//
// Limits (documented in docs/running-under-limits.md, "Pilot workers"): a process that closes
// the descriptors it inherited (a daemon, Python's subprocess with close_fds, an MPI
// launcher's remote ranks) does not hold the lease; on the same host the process group covers
// what stayed in the group, and Slurm's end of the allocation covers steps (srun ranks).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "common/result.hpp"

namespace dlsweep::sched::pool {

/// What a probe of an earlier run's lease found.
enum class LeaseState {
  held,         ///< a process of that run still has it open
  free,         ///< nobody holds it: every process that inherited it is gone
  missing,      ///< no lease file (no lease was taken, or it was removed)
  unsupported,  ///< the filesystem refuses flock here (ENOLCK, EOPNOTSUPP, ...): cannot tell
};
std::string_view to_string(LeaseState s);

/// A lease taken by this process: an open file with an exclusive flock, inheritable.
class Lease {
 public:
  /// Creates (or opens) `path` and takes the lock without waiting. Fails when the lock is
  /// held (another run has it) or the filesystem refuses it; the error says which.
  static Result<Lease> take(const std::filesystem::path& path);
  Lease(Lease&& o) noexcept;
  Lease& operator=(Lease&& o) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  /// The descriptor a child inherits across fork and exec (no close-on-exec).
  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  /// Closes this process's copy: the lock stays held while a child still has it open.
  void close();

 private:
  Lease(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
};

/// Tries the lock of `path` without waiting, and lets it go at once.
LeaseState probe_lease(const std::filesystem::path& path);

/// True when a live process of this host (one that is not a zombie: a dead process no one
/// has reaped yet runs nothing) is in process group `pgid`. Reads /proc; pgid <= 1 is no group.
bool group_has_live_process(long pgid);

/// This host's name, as the worker writes it in <tag>.run.
std::string this_host();

}  // namespace dlsweep::sched::pool
