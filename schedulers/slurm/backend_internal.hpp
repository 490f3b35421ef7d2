// backend_internal.hpp — what SlurmBackend's two source files share: the job and batch
// records (private to the backend), the worker-thread helper and a duration helper. Not for use outside them.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "schedulers/slurm/backend.hpp"

namespace dlsweep::sched {

using slurm::BatchRequest;
using slurm::PreparedBatch;
using slurm::Shape;

struct SlurmBackend::Job {
  std::string id;
  JobSpec spec;
  Shape shape;
  bool in_batch = false;        ///< part of a Batch not yet accepted
  bool cancel_requested = false;
  /// spec.timeout_s from the last `started` (Slurm's --time is whole minutes: the backend
  /// enforces the timeout itself); destroyed, and so cancelled, with the job.
  std::unique_ptr<boost::asio::steady_timer> timeout_timer;
  std::string timed_out;        ///< the cancel was the timeout's: the terminal event's message
};

struct SlurmBackend::Batch {
  BatchRequest request;
  PreparedBatch prepared;
  std::vector<std::string> ids;  ///< task i = ids[i]
  int attempts = 0;
  bool ambiguous = false;        ///< an earlier attempt may have been accepted (timeout)
  bool sending = false;          ///< a driver call for it is running now
  std::chrono::steady_clock::time_point first_try;
};

/// `s` seconds as a steady_clock duration.
inline std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

template <class F, class Done>
void SlurmBackend::run_on_worker(F work, Done done) {
  auto guard = boost::asio::make_work_guard(io_);
  boost::asio::post(worker_, [this, work = std::move(work), done = std::move(done), guard = std::move(guard),
                              alive = std::weak_ptr<int>(alive_)]() mutable {
    if (alive.expired()) return;
    auto result = work(*driver_);
    boost::asio::post(io_, [result = std::move(result), done = std::move(done), guard = std::move(guard),
                            alive]() mutable {
      if (alive.expired()) return;
      done(std::move(result));
    });
  });
}

}  // namespace dlsweep::sched
