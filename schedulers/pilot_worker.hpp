// pilot_worker.hpp — the entry point of `dlsweep worker`, the loop each pilot allocation of
// `backend: {kind: slurm, workers: N}` runs (the loop itself: slurm/pool_worker.hpp). The
// command line reaches it through here, as it reaches the backends through backend.hpp.
#pragma once

#include <string>

namespace dlsweep::sched {

struct PilotWorkerArgs {
  std::string pool;          ///< the study's pool directory
  std::string id;            ///< "w3"
  int ranks = 0;             ///< 0: $SLURM_NTASKS, else 1
  int time_limit_min = 0;    ///< the allocation's time limit; 0: unknown ($SLURM_JOB_END_TIME if set)
  double margin_s = 30;
  double idle_s = 120;
};

/// Runs the worker until it retires; log lines (time-stamped) go to stderr. Returns the exit
/// status: 0 retired, 2 a bad argument.
int run_pilot_worker(const PilotWorkerArgs& args);

}  // namespace dlsweep::sched
