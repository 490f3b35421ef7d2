// cmd_worker.cpp — `dlsweep worker`: the loop a pilot allocation runs (schedulers/slurm/pool_worker.hpp).
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <algorithm>

#include <fmt/format.h>

#include "orchestrator/commands.hpp"
#include "schedulers/slurm/pool_worker.hpp"

namespace dlsweep::orch {

int cmd_worker(const WorkerArgs& a) {
  sched::pool::WorkerConfig c;
  c.pool = a.pool;
  c.id = a.id;
  c.ranks = a.ranks;
  if (c.ranks <= 0) {
    const char* n = std::getenv("SLURM_NTASKS");
    c.ranks = n ? std::max(1, std::atoi(n)) : 1;
  }
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  c.end_time = sched::pool::allocation_end_from_env();
  if (c.end_time <= 0 && a.time_limit_min > 0) c.end_time = now + 60.0 * a.time_limit_min;
  c.margin_s = a.margin_s;
  c.idle_s = a.idle_s;
  if (c.id.empty() || c.id.find('/') != std::string::npos || c.id.find("..") != std::string::npos) {
    fmt::print(stderr, "dlsweep worker: --id '{}' is not a worker name (w1, w2, ...)\n", c.id);
    return 2;
  }
  return sched::pool::run_worker(c, [](const std::string& line) {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
    fmt::print(stderr, "{} dlsweep worker: {}\n", buf, line);
    std::fflush(stderr);
  });
}

}  // namespace dlsweep::orch
