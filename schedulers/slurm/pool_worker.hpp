// pool_worker.hpp — `dlsweep worker`: the program a pilot allocation runs. It takes trials
// from the pool's queue (pool_files.hpp) one after another and runs each trial's batch
// script as a per-trial job would (same trial dir, protocol, logs, checkpoints; multi-rank
// trials start their ranks as srun steps inside this allocation).
//
// Behaviour:
//  - Takes only trials that fit: ranks <= the allocation's tasks, and (when the end of the
//    allocation is known) an estimate of its length — the task's own, or the longest trial
//    so far (pool/estimate) — that ends before the allocation does, with `margin_s` to spare.
//    When trials wait and none fits, the worker retires (exit 0) so that the orchestrator
//    replaces it with a fresh allocation.
//  - Each trial runs in its own process group. `<tag>.cancel` or the trial's timeout: TERM to
//    its script (which passes it on), KILL of the group after `grace_s`.
//  - USR2 (Slurm's time-limit warning) is passed on to the running trial's script (a trial
//    that checkpoints exits 75: the orchestrator queues it again, another worker resumes it);
//    the worker then takes nothing more and exits 0.
//  - TERM (scancel of the allocation, a node going down): the running trial is stopped, its
//    end is NOT recorded (the orchestrator puts it back in the queue when the allocation is
//    gone), and the worker exits. kill -9 of the worker: the allocation's script stops the
//    trial's process group (its pgid is in <tag>.run) and the allocation ends the same way.
//  - A task in its own directory with no end when it starts was taken by an earlier start of
//    the same allocation (Slurm requeued the job and runs its script again from the start):
//    the orchestrator leaves it with the worker while its job lives, so the worker runs it
//    first, once every process of the earlier run is gone (its run becomes one of the task's
//    unfinished runs, as when the orchestrator puts a task back in the queue).
//  - Exits 0 when `stop` appears and nothing waits, or after `idle_s` with nothing to do.
#pragma once

#include <functional>
#include <string>

#include "schedulers/slurm/pool_files.hpp"

namespace dlsweep::sched::pool {

struct WorkerConfig {
  std::filesystem::path pool;
  std::string id;              ///< "w3": its directory under pool/w
  int ranks = 1;               ///< tasks of this allocation (SLURM_NTASKS)
  double end_time = 0;         ///< seconds since the epoch when the allocation ends; 0: unknown
  double start_time = 0;       ///< when the allocation began (0: now): a trial longer than the whole
                               ///< allocation is taken by a worker that has run nothing yet (no
                               ///< fresh allocation would do better)
  double margin_s = 30;        ///< a trial must end this long before end_time
  double idle_s = 120;         ///< exit after this long with nothing to run
  double grace_s = 10;         ///< TERM -> KILL
  double poll_s = 0.2;
};

/// Runs the worker loop until it retires; returns the process's exit status.
int run_worker(const WorkerConfig& config, const std::function<void(const std::string&)>& log);

/// The allocation's end from the environment (SLURM_JOB_END_TIME), 0 when unknown.
double allocation_end_from_env();

}  // namespace dlsweep::sched::pool
