// fake_slurm_driver.hpp — an in-memory Slurm controller (FakeController) and the Driver
// that talks to it (FakeDriver), for SlurmBackend tests without slurmctld: submissions become
// PENDING records the test then moves through states and reasons by hand; FakeSlurmFixture
// puts a SlurmBackend on one.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/driver.hpp"
#include "slurm_test_support.hpp"

namespace slurm_test {

using dlsweep::sched::slurm::Driver;
using dlsweep::sched::slurm::DriverError;
using dlsweep::sched::slurm::DriverResult;
using dlsweep::sched::slurm::JobRecord;
using dlsweep::sched::slurm::JobState;
using dlsweep::sched::slurm::SubmitRequest;
using dlsweep::sched::JobEventKind;
using dlsweep::sched::JobSpec;
using dlsweep::sched::SlurmBackend;
using dlsweep::sched::SlurmOptions;

/// The controller's side, shared between the test and the driver (worker thread).
struct FakeController {
  std::mutex m;
  bool down = false;               ///< every call fails as "Unable to contact slurm controller"
  bool accept_then_timeout = false;  ///< next submit is accepted but reported as a timeout
  std::string refuse;              ///< non-empty: submit fails permanently with this
  /// >= 0: a site's MaxSubmitJobsPerUser — a submission that would leave more than this
  /// many pending or running jobs (array tasks count one each) is refused, in Slurm's words.
  int submit_limit = -1;
  std::size_t most_live = 0;       ///< the most pending + running jobs seen after a submission
  int refusals = 0;
  std::uint32_t next_id = 100;
  int max_array = 1001;
  std::vector<JobRecord> table;
  std::vector<SubmitRequest> submits;
  std::vector<std::vector<std::string>> cancels;
  std::vector<std::chrono::steady_clock::time_point> query_times;
  int list_calls = 0;

  /// Sets the state of array task (job, task) (or plain job when task < 0).
  void set(std::uint32_t job, int task, JobState st, int wait_status = 0) {
    std::lock_guard l(m);
    for (auto& r : table) {
      bool match = task < 0 ? (r.array_job_id == 0 && r.job_id == job)
                            : (r.array_job_id == job && r.array_task_id == static_cast<std::uint32_t>(task));
      if (match) {
        r.state = st;
        r.state_name = std::string(to_string(st));
        r.wait_status = wait_status;
      }
    }
  }
  void set_all(JobState st) {
    std::lock_guard l(m);
    for (auto& r : table) {
      r.state = st;
      r.state_name = std::string(to_string(st));
    }
  }
  /// Sets the pending reason (code, description) and restart count of array task (job, task).
  void set_reason(std::uint32_t job, int task, const std::string& reason, const std::string& detail = "",
                  int restarts = 0) {
    std::lock_guard l(m);
    for (auto& r : table)
      if (r.array_job_id == job && r.array_task_id == static_cast<std::uint32_t>(task)) {
        r.reason = reason;
        r.reason_detail = detail;
        r.restart_count = restarts;
      }
  }
  void erase(std::uint32_t job, int task) {
    std::lock_guard l(m);
    std::erase_if(table, [&](const JobRecord& r) {
      return task < 0 ? r.job_id == job : (r.array_job_id == job && r.array_task_id == static_cast<std::uint32_t>(task));
    });
  }
};

inline DriverError unreachable() {
  return DriverError{dlsweep::Error{"Unable to contact slurm controller (connect failure)", "fake", ""}, true};
}

class FakeDriver final : public Driver {
 public:
  explicit FakeDriver(std::shared_ptr<FakeController> c) : c_(std::move(c)) {}
  std::string_view name() const override { return "fake"; }
  DriverResult<std::uint32_t> submit(const SubmitRequest& req) override {
    std::lock_guard l(c_->m);
    if (c_->down) return std::unexpected(unreachable());
    if (!c_->refuse.empty()) return std::unexpected(DriverError{dlsweep::Error{c_->refuse, "sbatch", ""}, false});
    std::size_t n = 1;
    if (!req.array.empty()) n = std::stoul(req.array.substr(2)) + 1;  // "0-N[%T]"
    const std::size_t live = live_jobs();
    if (c_->submit_limit >= 0 && live + n > static_cast<std::size_t>(c_->submit_limit)) {
      c_->refusals++;
      return std::unexpected(DriverError{
          dlsweep::Error{"exit status 1: sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job "
                         "submission failed: Job violates accounting/QOS policy (job submit limit, user's size "
                         "and/or time limits)",
                         "sbatch", ""},
          true});
    }
    c_->most_live = std::max(c_->most_live, live + n);
    c_->submits.push_back(req);
    const std::uint32_t id = c_->next_id++;
    for (std::size_t i = 0; i < n; ++i) {
      JobRecord r;
      r.job_id = id * 1000 + static_cast<std::uint32_t>(i);
      if (!req.array.empty()) {
        r.array_job_id = id;
        r.array_task_id = static_cast<std::uint32_t>(i);
      } else {
        r.job_id = id;
      }
      r.state = JobState::pending;
      r.state_name = "PENDING";
      r.name = req.job_name;
      r.comment = req.comment;
      c_->table.push_back(r);
    }
    if (c_->accept_then_timeout) {
      c_->accept_then_timeout = false;
      return std::unexpected(DriverError{dlsweep::Error{"no answer within 60 s", "sbatch", "", dlsweep::ErrorKind::timeout}, true});
    }
    return id;
  }
  DriverResult<std::vector<JobRecord>> query(const std::vector<std::uint32_t>&) override {
    std::lock_guard l(c_->m);
    c_->query_times.push_back(std::chrono::steady_clock::now());
    if (c_->down) return std::unexpected(unreachable());
    return c_->table;
  }
  DriverResult<std::vector<JobRecord>> list_jobs() override {
    std::lock_guard l(c_->m);
    c_->list_calls++;
    if (c_->down) return std::unexpected(unreachable());
    return c_->table;
  }
  DriverResult<std::vector<JobRecord>> accounting(const std::vector<std::string>&) override {
    return std::vector<JobRecord>{};
  }
  DriverResult<void> cancel(const std::vector<std::string>& ids) override {
    std::lock_guard l(c_->m);
    if (c_->down) return std::unexpected(unreachable());
    c_->cancels.push_back(ids);
    return {};
  }
  DriverResult<int> max_array_size() override {
    std::lock_guard l(c_->m);
    if (c_->down) return std::unexpected(unreachable());
    return c_->max_array;
  }
  void interrupt() override {}

 private:
  std::size_t live_jobs() const {
    std::size_t n = 0;
    for (const auto& r : c_->table) n += r.state == JobState::pending || r.state == JobState::running;
    return n;
  }
  std::shared_ptr<FakeController> c_;
};

/// A SlurmBackend on a FakeController, polling fast (0.02 s doubling to 0.16 s).
struct FakeSlurmFixture {
  TempDir dir;
  boost::asio::io_context io;
  std::shared_ptr<FakeController> ctl = std::make_shared<FakeController>();
  Recorder rec;
  std::vector<std::string> logs;
  std::unique_ptr<SlurmBackend> backend;

  explicit FakeSlurmFixture(std::size_t max_concurrent = 4, int vanish_polls = 2) {
    SlurmOptions o;
    o.script_dir = dir.path() / "slurm";
    o.max_concurrent = max_concurrent;
    o.poll_min_s = 0.02;
    o.poll_max_s = 0.16;
    o.vanish_polls = vanish_polls;
    auto b = SlurmBackend::create(io, o, std::make_unique<FakeDriver>(ctl));
    REQUIRE(b.has_value());
    backend = std::move(*b);
    backend->set_event_handler(rec.handler());
    backend->set_log_handler([this](const std::string& m) { logs.push_back(m); });
  }
  JobSpec job(int trial) const {
    JobSpec s;
    s.study = "fake";
    s.trial_id = trial;
    s.attempt = 0;
    s.argv = {"/bin/true"};
    s.workdir = dir.path() / ("t" + std::to_string(trial));
    return s;
  }
  std::vector<std::string> submit(int n, int first = 0) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      auto id = backend->submit(job(first + i));
      REQUIRE(id.has_value());
      ids.push_back(*id);
    }
    return ids;
  }
  std::size_t submits() {
    std::lock_guard l(ctl->m);
    return ctl->submits.size();
  }
  bool queued(const std::vector<std::string>& ids) {
    for (auto& id : ids)
      if (!rec.has(id, JobEventKind::queued)) return false;
    return true;
  }
};

}  // namespace slurm_test
