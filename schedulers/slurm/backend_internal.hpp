// backend_internal.hpp — what SlurmBackend's two source files share: the job and batch
// records (private to the backend) and a duration helper. Not for use outside them.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "schedulers/slurm/backend.hpp"

namespace dlsweep::sched {

struct SlurmBackend::Job {
  std::string id;
  JobSpec spec;
  Shape shape;
  bool in_batch = false;        ///< part of a Batch not yet accepted
  bool cancel_requested = false;
};

struct SlurmBackend::Batch {
  BatchRequest request;
  PreparedBatch prepared;
  std::vector<std::string> ids;  ///< task i = ids[i]
  int attempts = 0;
  bool ambiguous = false;        ///< an earlier attempt may have been accepted (timeout)
  std::chrono::steady_clock::time_point first_try;
};

/// `s` seconds as a steady_clock duration.
inline std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace dlsweep::sched
