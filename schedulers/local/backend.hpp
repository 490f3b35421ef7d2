// backend.hpp — runs each job as a child process of the orchestrator.
//
// Contract (on top of backend.hpp):
//  - Job ids are assigned at submit: "local-<orchestrator pid>.<seq>", unique within a
//    machine's uptime even across orchestrator restarts. The pid of a running job is in
//    its `started` message and available from pid_of().
//  - Every job emits `queued` at submit, `started` when launched (FIFO order once fewer
//    than max_concurrent jobs run), then exactly one of `exited`, `cancelled`, `lost`.
//  - A job runs as the leader of its own process group. Cancel and timeout send SIGTERM to
//    the group, then SIGKILL after `cancel_grace_s`. When the leader has been reaped, for
//    any reason, the rest of its group gets SIGKILL: like a batch system, a finished job
//    leaves no processes behind.
//  - ranks > 1: argv becomes `mpirun -np N --oversubscribe [--allow-run-as-root] argv...`
//    (the root flag only when we run as root; Open MPI refuses root otherwise). mpirun
//    forwards SIGTERM to its ranks, which is why cancel starts with SIGTERM.
//  - Children are reaped on SIGCHLD (an asio signal_set) with waitpid on our own pids
//    only, never waitpid(-1): other children of the process are left alone.
//  - The destructor SIGKILLs every remaining job's group and reaps it: no orphans. No
//    events are delivered after destruction.
//  - submit() forks and waits (briefly) until the child has exec'd, so a start failure is
//    known at once and reported as `lost`. Call every method from the io_context's thread.
//  - The backend keeps the io_context busy only while it has running children or pending
//    timers, so io_context::run() returns when all jobs are done.
//  - keep_imported: a job the runner can take (warm_runner.hpp runs_warm) is handed to a
//    kept-imported runner instead of a new process; its pid is the runner's, and everything
//    above holds with the runner as the job's process group: cancel and timeout stop the
//    runner (SIGTERM, then SIGKILL), and a runner that dies ends its job as a process would.
//    The job ends `exited` with the status the runner reports; the runner then waits, idle,
//    for the next job of the same command.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/asio.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/local/mpi_env.hpp"
#include "schedulers/local/warm_pool.hpp"

namespace dlsweep::sched {

struct LocalOptions {
  double cancel_grace_s = 10.0;   ///< SIGTERM -> SIGKILL delay on cancel/timeout
  std::string mpirun = "mpirun";  ///< launcher for ranks > 1 (looked up on PATH)
  /// `backend.keep_imported`: jobs that run the Optuna-style runner (`python3 -m
  /// dlsweep_optuna ...`, one rank) go to runners kept imported between trials (warm_pool.hpp).
  bool keep_imported = false;
  double warm_poll_s = 0.02;      ///< how often a kept-imported runner's done.json is read
};

class LocalBackend final : public Backend {
 public:
  /// max_concurrent 0 is treated as 1.
  LocalBackend(boost::asio::io_context& io, std::size_t max_concurrent, LocalOptions options = {});
  ~LocalBackend() override;
  LocalBackend(const LocalBackend&) = delete;
  LocalBackend& operator=(const LocalBackend&) = delete;

  std::string_view name() const override { return "local"; }
  void set_event_handler(EventHandler h) override { handler_ = std::move(h); }
  /// Fails (no event) on an empty argv or a workdir that is empty or cannot be created.
  Result<std::string> submit(const JobSpec& job) override;
  void cancel(const std::string& job_id) override;
  std::size_t active() const override { return queue_.size() + running_.size(); }
  std::size_t max_concurrent() const override { return max_concurrent_; }
  /// Trials' processes found by DLSWEEP_TRIAL_DIR in /proc (orphans.hpp), stopped by group.
  std::size_t stop_orphans(const std::vector<std::filesystem::path>& trial_dirs, double grace_s) override;

  /// commands.sh: each job's command line as launch_argv() makes it.
  Result<std::vector<std::string>> dry_run(const std::vector<JobSpec>& jobs,
                                           const std::filesystem::path& out_dir) override;

  /// The pid (== process group id) of a running job; nullopt if queued, finished or unknown.
  std::optional<pid_t> pid_of(const std::string& job_id) const;
  /// The command line a job is launched with (mpirun prefix for ranks > 1).
  Result<std::vector<std::string>> launch_argv(const JobSpec& job) const;

 private:
  struct Job;

  /// What submit() refuses before anything happens (empty argv or workdir).
  static Status check_job(const JobSpec& job);
  void emit(JobEvent ev);
  void pump();
  void launch(std::unique_ptr<Job> job);
  bool launch_warm(std::unique_ptr<Job>& job);
  void arm_warm_poll(const std::string& id);
  void arm_timeout(Job& job);
  void arm_sigchld();
  void on_sigchld();
  void finish(const std::string& id, int wait_status);
  void finish_warm(const std::string& id, int exit_code);
  void terminate(Job& job, std::string reason);
  JobEvent event_for(const Job& job, JobEventKind kind, std::string message) const;

  boost::asio::io_context& io_;
  std::size_t max_concurrent_;
  LocalOptions options_;
  EventHandler handler_;
  boost::asio::signal_set sigchld_;
  bool sigchld_armed_ = false;
  /// OMPI_MCA_pml=ob1 for multi-rank jobs: decided once, from the environment and the MCA files.
  bool ompi_pml_ = local_sets_ompi_pml();
  std::uint64_t seq_ = 0;
  std::deque<std::unique_ptr<Job>> queue_;
  std::map<std::string, std::unique_ptr<Job>> running_;
  std::unique_ptr<WarmPool> warm_;  ///< keep_imported only
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  ///< handlers hold a weak_ptr
};

}  // namespace dlsweep::sched
