// plan.hpp — which waiting jobs go out together, as how many arrays, with which
// throttle. Pure: the backend calls it on every flush with what it knows.
//
// Rules:
//  - Jobs of the same shape (study, ranks, time limit in minutes) go into one array, in the order
//    they were submitted; argv, env and trial dir differ per task (they live in the index
//    file), so they do not split arrays. Different shapes make different arrays, in order of
//    each shape's first waiting job.
//  - An array holds at most max_array_size tasks (MaxArraySize - 1 is the highest index);
//    bigger groups are split.
//  - The throttle bounds running jobs across ALL of the backend's arrays: a new array is
//    only planned while the live (submitted, not finished) tasks number fewer than
//    max_concurrent, and gets throttle = max_concurrent - live. Its tasks then count as
//    live, so the rest waits until earlier arrays drain. Hence running <= max_concurrent
//    at all times, and a batch that fits goes out as one array.
//  - At most `room` tasks are planned in all (the site's submit limit, learned from its
//    refusals): arrays are cut to it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dlsweep::sched::slurm {

/// What must be equal for jobs to share an array: the job name (study) and the resources.
struct Shape {
  std::string study;
  int ranks = 1;
  int time_limit_min = 0;
  std::string launcher;              ///< JobSpec::launcher
  bool warn_always = true;           ///< JobSpec::warn_always
  bool operator==(const Shape&) const = default;
};

struct WaitingJob {
  std::string id;
  Shape shape;
};

struct PlannedArray {
  Shape shape;
  std::vector<std::string> ids;  ///< task i = ids[i]
  std::size_t throttle = 0;      ///< 0: none needed (throttle >= tasks)
};

/// Plans arrays for `waiting` (FIFO). `live` = tasks submitted and not finished.
/// `room`: how many tasks in all the site takes now (slurm/site_limit.hpp); the jobs past it
/// stay waiting.
std::vector<PlannedArray> plan_arrays(const std::vector<WaitingJob>& waiting, std::size_t max_concurrent,
                                      std::size_t live, std::size_t max_array_size,
                                      std::size_t room = static_cast<std::size_t>(-1));

/// Minutes of --time for a job timeout in seconds: ceil(s / 60), at least 1; 0 for none.
int time_limit_minutes(double timeout_s);

}  // namespace dlsweep::sched::slurm
