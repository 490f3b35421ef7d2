// pool_rerun.cpp — see pool_rerun.hpp.
#include "schedulers/slurm/pool_rerun.hpp"

#include <fmt/format.h>

namespace dlsweep::sched::pool {

RerunDecision decide_rerun(const RunRecord& earlier, const EarlierRunSeen& seen) {
  const std::string run = fmt::format("the earlier run (process group {} on {})", earlier.pgid, earlier.host);
  if (seen.same_host && seen.group_alive)
    return {RerunVerdict::wait, fmt::format("{} still has a live process", run)};
  if (seen.lease == LeaseState::held)
    return {RerunVerdict::wait, fmt::format("{} still holds its lease {}", run, earlier.lease)};
  if (seen.lease == LeaseState::free)
    return {RerunVerdict::start, fmt::format("{} is gone: its lease is free", run)};
  if (seen.same_host)
    return {RerunVerdict::start, fmt::format("{} is gone: no live process in its group (lease {})", run,
                                             to_string(seen.lease))};
  return {RerunVerdict::start_unchecked,
          fmt::format("{} cannot be checked from here (another host, lease {}): relying on the end of its "
                      "allocation",
                      run, to_string(seen.lease))};
}

RerunDecision decide_rerun(const std::vector<RunRecord>& earlier, const std::vector<EarlierRunSeen>& seen) {
  // A run not looked at cannot be vouched for.
  if (seen.size() < earlier.size()) return {RerunVerdict::wait, "an earlier run was not looked at"};
  RerunDecision out{RerunVerdict::start, "no earlier run without an end"};
  for (std::size_t i = 0; i < earlier.size(); ++i) {
    RerunDecision d = decide_rerun(earlier[i], seen[i]);
    if (d.verdict == RerunVerdict::wait) return d;
    if (i == 0 || (d.verdict == RerunVerdict::start_unchecked && out.verdict != RerunVerdict::start_unchecked))
      out = std::move(d);
  }
  return out;
}

}  // namespace dlsweep::sched::pool
