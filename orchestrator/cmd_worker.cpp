// cmd_worker.cpp — `dlsweep worker`: the loop a pilot allocation runs (schedulers/pilot_worker.hpp).
#include "orchestrator/commands.hpp"
#include "schedulers/pilot_worker.hpp"

namespace dlsweep::orch {

int cmd_worker(const WorkerArgs& a) {
  return sched::run_pilot_worker(
      sched::PilotWorkerArgs{a.pool, a.id, a.ranks, a.time_limit_min, a.margin_s, a.idle_s});
}

}  // namespace dlsweep::orch
