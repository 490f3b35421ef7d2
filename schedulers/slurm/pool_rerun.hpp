// pool_rerun.hpp — the one rule for when a pilot worker may start a task that ran before and
// whose end no worker saw (its worker died with it running: the task came back to the queue
// with that run in TaskFile::unfinished_runs). Pure: the worker looks (pool_lease.hpp) and
// passes what it saw; this decides. A trial must never run twice at once, so the answer is
// "wait" for as long as anything says the earlier run may still have a process:
//
//   same host, its process group has a live   -> wait (a process stayed in the group after
//   (not zombie) process                         closing the lease, or the lease is not
//                                                checkable here)
//   its lease is held                         -> wait (one of its processes still has it,
//                                                in the group or out of it)
//   its lease is free                         -> start (every process that inherited it is gone)
//   same host, lease missing or unsupported,  -> start (the group is the evidence)
//   group empty
//   another host, lease missing/unsupported   -> start_unchecked: nothing here can see that
//                                                host's processes; what stopped the run is the
//                                                end of its allocation (the orchestrator puts
//                                                a task back only once the worker's Slurm job
//                                                has ended). The worker says so in its log.
//
// A process group id is only checked on the host that wrote it, and only while the earlier
// run's lease does not settle the question: an id the kernel has since given to another group
// makes the rerun wait for that group too (rare: a wait, never an overlap).
#pragma once

#include <string>
#include <vector>

#include "schedulers/slurm/pool_files.hpp"
#include "schedulers/slurm/pool_lease.hpp"

namespace dlsweep::sched::pool {

/// What the claimant saw of one earlier run.
struct EarlierRunSeen {
  LeaseState lease = LeaseState::missing;
  bool same_host = false;    ///< the run's host is this host
  bool group_alive = false;  ///< same host only: a live process is in the run's process group
};

enum class RerunVerdict {
  wait,             ///< the earlier run may still have a process: do not start
  start,            ///< the earlier run is gone
  start_unchecked,  ///< nothing can be checked from here; its allocation's end is all there is
};

struct RerunDecision {
  RerunVerdict verdict = RerunVerdict::wait;
  std::string why;  ///< for the worker's log
};

/// The verdict for one earlier run.
RerunDecision decide_rerun(const RunRecord& earlier, const EarlierRunSeen& seen);

/// The verdict for all of them: wait if any says wait (the first such), else start_unchecked
/// if any says so, else start. No earlier runs: start.
RerunDecision decide_rerun(const std::vector<RunRecord>& earlier, const std::vector<EarlierRunSeen>& seen);

}  // namespace dlsweep::sched::pool
