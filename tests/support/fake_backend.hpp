// fake_backend.hpp — a timer-driven Backend for tests of the orchestrator: no processes,
// only asio timers, so a whole sweep runs in milliseconds and deterministically.
//
// Each submitted job asks the script what it will do (FakeOutcome). The job then:
//   queued (at submit) -> waits queue_s -> starts when fewer than max_concurrent run (FIFO
//   in the order jobs became ready) -> started -> writes its metrics lines to
//   workdir/metrics.jsonl spread evenly over run_s (line i of k at (i+1)/k * run_s) ->
//   exited with exit_code (or killed by `signal`).
// It honours the same contract as the real backends: bounded concurrency, exactly one
// terminal event, cancel (queued or running -> `cancelled` at once; finished/unknown ->
// no-op), timeout_s (-> `cancelled`, "timed out after N s"). Like a well-behaved trial it
// reads workdir/control.json after each metrics line it writes and, if it says stop, exits
// with protocol::kExitStopped. `lost` outcomes model a job that never started. Call every
// method from the io_context's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/asio.hpp"
#include "schedulers/backend.hpp"

namespace dlsweep::sched {

/// What a fake job does.
struct FakeOutcome {
  double queue_s = 0;   ///< time in the backend's queue before it may start
  double run_s = 0;     ///< run time once started
  int exit_code = 0;    ///< exit status reported by `exited`
  std::vector<std::string> metrics_lines;  ///< appended to workdir/metrics.jsonl (if workdir set)
  int signal = 0;       ///< added: nonzero -> `exited` reports death by this signal
  bool lost = false;    ///< added: emit `lost` instead of starting
  std::string message;  ///< added: message of the terminal event (default: a description)
};

using FakeScript = std::function<FakeOutcome(const JobSpec&)>;

class FakeBackend final : public Backend {
 public:
  /// max_concurrent 0 is treated as 1.
  FakeBackend(boost::asio::io_context& io, std::size_t max_concurrent, FakeScript script);
  ~FakeBackend() override;
  FakeBackend(const FakeBackend&) = delete;
  FakeBackend& operator=(const FakeBackend&) = delete;

  std::string_view name() const override { return "fake"; }
  void set_event_handler(EventHandler h) override { handler_ = std::move(h); }
  /// Fails (no event) only on an empty argv, like the real backends. Ids: "fake-<seq>".
  Result<std::string> submit(const JobSpec& job) override;
  /// commands.sh with each job's argv as given (nothing is "run": the fake runs nothing).
  Result<std::vector<std::string>> dry_run(const std::vector<JobSpec>& jobs,
                                           const std::filesystem::path& out_dir) override;
  void cancel(const std::string& job_id) override;
  std::size_t active() const override { return jobs_.size(); }
  std::size_t max_concurrent() const override { return max_concurrent_; }

  /// Jobs running now (started, not terminal).
  std::size_t running() const { return running_; }
  /// Every spec accepted by submit(), in order: lets tests check what was launched.
  const std::vector<JobSpec>& submitted() const { return submitted_; }

 private:
  struct Job;

  void emit(const Job& job, JobEventKind kind, std::string message, int exit_code = 0, int signal = 0);
  void make_ready(const std::string& id);
  void pump();
  void start(Job& job);
  void tick(const std::string& id);
  void end(const std::string& id, JobEventKind kind, std::string message, int exit_code, int signal);

  boost::asio::io_context& io_;
  std::size_t max_concurrent_;
  FakeScript script_;
  EventHandler handler_;
  std::uint64_t seq_ = 0;
  std::size_t running_ = 0;
  std::map<std::string, std::unique_ptr<Job>> jobs_;  ///< every non-terminal job
  std::deque<std::string> ready_;                     ///< waited out queue_s, not started
  std::vector<JobSpec> submitted_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  ///< handlers hold a weak_ptr
};

}  // namespace dlsweep::sched
