// plan.cpp — array planning; see slurm/plan.hpp for the rules.
#include "schedulers/slurm/plan.hpp"

#include <algorithm>
#include <cmath>

namespace dlsweep::sched::slurm {

std::vector<PlannedArray> plan_arrays(const std::vector<WaitingJob>& waiting, std::size_t max_concurrent,
                                      std::size_t live, std::size_t max_array_size, std::size_t room) {
  std::vector<PlannedArray> out;
  const std::size_t cap = std::max<std::size_t>(max_array_size, 1);
  const std::size_t bound = std::max<std::size_t>(max_concurrent, 1);
  std::vector<bool> taken(waiting.size(), false);
  for (std::size_t first = 0; first < waiting.size(); ++first) {
    if (taken[first]) continue;
    const Shape shape = waiting[first].shape;
    std::vector<std::string> group;
    for (std::size_t i = first; i < waiting.size(); ++i) {
      if (!taken[i] && waiting[i].shape == shape) {
        group.push_back(waiting[i].id);
        taken[i] = true;
      }
    }
    for (std::size_t start = 0; start < group.size();) {
      if (live >= bound || room == 0) return out;
      const std::size_t n = std::min({cap, group.size() - start, room});
      room -= n;
      PlannedArray a;
      a.shape = shape;
      a.ids.assign(group.begin() + static_cast<std::ptrdiff_t>(start),
                   group.begin() + static_cast<std::ptrdiff_t>(start + n));
      const std::size_t free = bound - live;
      a.throttle = free < n ? free : 0;
      live += n;
      start += n;
      out.push_back(std::move(a));
    }
  }
  return out;
}

int time_limit_minutes(double timeout_s) {
  if (!(timeout_s > 0)) return 0;
  return std::max(1, static_cast<int>(std::ceil(timeout_s / 60.0)));
}

}  // namespace dlsweep::sched::slurm
