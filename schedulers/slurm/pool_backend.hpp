// pool_backend.hpp — `backend: {kind: slurm, workers: N}`: trials run inside N long-lived
// Slurm allocations (pilot workers) instead of one job each: one queue wait and a couple of
// controller RPCs per worker rather than per trial, and under a site's job limit (4 jobs per
// user) N workers keep N trials running whatever the study's size.
//
// Contract (on top of backend.hpp):
//  - submit() renders the trial's batch script as a per-trial job's (not requeueing itself:
//    the pool requeues), writes it to the pool (pool_files.hpp) and queues it there: `queued`
//    (native id "pool:<tag>"). A worker takes it: `started` (the worker wrote <tag>.run), then
//    `exited` / `cancelled` (cancel(), or the timeout the worker enforces).
//  - Workers are ordinary jobs of the Slurm backend (an inner SlurmBackend, study
//    "<study>.workers"): the same options, rendering, site-limit handling, polling and
//    resume. Each is sized for the largest trial seen (ranks, the study's nodes/GPUs) with
//    the study's time limit; the backend keeps min(workers, unfinished trials) of them alive,
//    and replaces one that ends while work remains (retired near its time limit, idle, or dead).
//  - A worker's allocation that ends (any way: time limit, scancel, node failure, kill -9 of
//    the worker) with a trial it had started and not finished: the trial goes back to the
//    queue (`requeued`, not terminal) and another worker resumes it from its checkpoint, once
//    every process of the earlier run is gone (see below): it never runs twice at once. A trial stopped by the
//    time-limit warning with a checkpoint (exit 75) is requeued the same way.
//  - A worker's allocation that Slurm requeues (an admin's requeue, a preemption or node
//    failure with requeue; the inner backend's `requeued`): its job lives on and runs the
//    same worker again, which takes back its own unended tasks. Its started trials are
//    `requeued` (not put back in the queue; `started` again when the restarted worker's new
//    run is seen, never by the earlier run's record); the worker is not replaced.
//  - Resume: surviving_jobs() follows the live workers (found on the controller in any state
//    that is not final: COMPLETING, REQUEUED, SUSPENDED, ... included) and lists every task
//    still in the pool; tasks of workers that are gone go back to the queue.
//  - A task goes back to the queue naming its run if it had started (pool_files.hpp): the
//    next worker starts it only once that run is gone (pool_rerun.hpp). The wrapper around
//    each worker stops the trial's process group when the worker dies; the run's lease
//    covers the wrapper dying too, and clusters whose process tracking loses processes.
//  - `stop` tells idle workers to exit: written when the engine says no more work will come
//    (no_more_work(), at the end of the sweep), and when the backend is destroyed with nothing
//    left to run; never because the task map is momentarily empty (the next PBT generation
//    or window trial may come a turn later). Otherwise idle workers wait (for more trials, or
//    a resumed orchestrator) up to their idle time.
//
// What it decides from the pool's files (a trial started, ended, requeued; an ended worker's
// tasks; how many workers; when to give up) is pure code in pool_decide.hpp: this class reads
// the files into a snapshot and carries out the answer.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/asio.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/pool_decide.hpp"
#include "schedulers/slurm/pool_files.hpp"

namespace dlsweep::sched {

/// On resume: whether a worker's allocation, in this Slurm state ("RUNNING", "COMPLETING",
/// sacct's "CANCELLED by 0", ...), may still run the worker's processes: anything that is not
/// final by slurm::is_final (the one parser Slurm tracking uses). Its tasks stay with it.
bool pool_worker_alive(std::string_view slurm_state);

/// How long the backend waits before it looks at the pool's files again: 0.25 s after a
/// change (a trial started or ended, a cancel asked), doubling up to 1 s while nothing changes.
double next_pool_scan_s(double previous_s, bool changed);

class SlurmPoolBackend final : public Backend {
 public:
  /// `options.workers` > 0; `options.script_dir` is the Slurm directory (the pool is its
  /// "pool" subdirectory). `worker_exe`: the dlsweep binary the workers run ("" = this one).
  /// `driver`: how the workers' allocations reach Slurm (null: the one options choose; tests
  /// give a fake controller).
  static Result<std::unique_ptr<SlurmPoolBackend>> create(boost::asio::io_context& io, SlurmOptions options,
                                                          std::filesystem::path worker_exe = {},
                                                          std::unique_ptr<slurm::Driver> driver = nullptr);
  ~SlurmPoolBackend() override;

  std::string_view name() const override { return "slurm"; }
  void set_event_handler(EventHandler h) override { handler_ = std::move(h); }
  Result<std::string> submit(const JobSpec& job) override;
  void cancel(const std::string& job_id) override;
  std::size_t active() const override { return tasks_.size(); }
  std::size_t max_concurrent() const override { return std::size_t(options_.workers); }
  /// Twice the workers: a trial is waiting in the pool whenever one ends.
  std::size_t submit_window() const override { return 2 * std::size_t(options_.workers); }
  std::string capacity_note() const override { return inner_->capacity_note(); }
  Result<std::vector<std::string>> dry_run(const std::vector<JobSpec>& jobs,
                                           const std::filesystem::path& out_dir) override;
  bool jobs_outlive_orchestrator() const override { return true; }
  Status preflight(const JobSpec& sample) override;
  Result<std::vector<SurvivingJob>> surviving_jobs(const std::string& study) override;
  Result<std::string> adopt(const JobSpec& spec, const std::string& native_id) override;
  Status cancel_detached(const std::vector<std::string>& native_ids) override;
  /// Writes `stop` (idle workers exit) and stops following the workers' allocations: they end
  /// by themselves. The only place `stop` is written while the backend lives: never at a
  /// moment the task map happens to be empty (a PBT generation boundary, the next window).
  void no_more_work() override;
  Result<std::string> submit_orchestrator(const JobSpec& job) override { return inner_->submit_orchestrator(job); }

  const pool::PoolDir& pool() const { return pool_; }
  /// Worker allocations submitted by this backend (replacements included).
  std::size_t workers_started() const { return workers_started_; }
  const SlurmBackend& inner() const { return *inner_; }

 private:
  struct Task {
    std::string id, tag, token, study;
    std::int64_t trial_id = 0;
    int attempt = 0;
    double timeout_s = 0;
    bool started = false;
    bool cancel_requested = false;
    std::string seen_run;  ///< pool::TaskView::seen_run
  };
  struct Worker {
    std::string inner_id, native_id;
    int ranks = 1;
    bool running = false;
    bool ended = false;
    bool reclaimed = false;  ///< every task of it is back in the queue: its directory is not read
    std::string why;         ///< how its allocation ended
  };

  SlurmPoolBackend(boost::asio::io_context& io, SlurmOptions options, std::string template_text,
                   std::unique_ptr<SlurmBackend> inner, std::filesystem::path worker_exe);

  void emit(const Task& t, JobEventKind kind, std::string message, int exit_code = 0, int signal = 0);
  void emit(const Task& t, const pool::Event& e);
  /// What the pure decisions (pool_decide.hpp) look at: the tasks, the workers, the counts
  /// (the claims are added by the caller, as it reads them).
  pool::Snapshot snapshot() const;
  /// Posts `ev` to the handler (after a terminal one, settles a pending no_more_work()).
  void deliver(JobEvent ev);
  /// After no_more_work(), once no task is left: writes `stop`, drops what watches workers.
  void settle_no_more_work();
  /// The trial's batch script and index in `dir` (the pool's scripts, or a dry run's folder).
  Result<std::filesystem::path> write_trial_script(const JobSpec& spec, const std::string& tag,
                                                   const std::filesystem::path& dir) const;
  /// Worker `n`'s allocation, as submit sends it and --dry-run shows it.
  JobSpec worker_spec(const std::string& study, int n, int ranks) const;
  Status write_task(const JobSpec& spec, const std::string& tag);
  void on_worker_event(const JobEvent& ev);
  /// Reads the claims (and the exit records of tracked tasks), asks decide_scan, carries it out.
  void scan();
  void apply(const pool::ScanAction& a);
  void schedule_scan(double delay_s);
  /// The allocation of worker `wid` is gone: its started, unfinished trials go back to the
  /// queue (after a scan, with `look_first`). False: some could not be moved (tried again).
  bool reclaim(const std::string& wid, const std::string& why, bool look_first = true);
  /// Slurm requeued worker `wid`'s allocation (`why`: the inner backend's message): its
  /// started trials are `requeued` and stay with it (pool::decide_worker_requeued).
  void worker_requeued(const std::string& wid, const std::string& why);
  /// The run record of a claim; nullopt when there is none or it is unreadable.
  std::optional<pool::RunRecord> read_run(const pool::Claim& c) const;
  void ensure_workers();
  Status submit_worker();
  Task* task_by_tag(const std::string& tag);
  /// A new task record for `spec` (not yet in tasks_); notes the study and the largest ranks.
  Task track(const JobSpec& spec, const std::string& tag);
  std::string worker_wrapper() const;
  /// A pool record this orchestrator cannot use (damaged, another version): said once per task.
  void log_once(const std::string& tag, const std::string& msg);

  boost::asio::io_context& io_;
  SlurmOptions options_;
  std::string template_text_;
  std::unique_ptr<SlurmBackend> inner_;
  std::filesystem::path worker_exe_;
  pool::PoolDir pool_;
  EventHandler handler_;
  std::string study_;
  std::uint64_t seq_ = 0;
  int worker_seq_ = 0;
  int max_ranks_ = 1;
  double longest_s_ = 0;
  std::size_t workers_started_ = 0;
  int failed_in_a_row_ = 0;   ///< workers that ended failing, since the last that did not (or a trial start)
  std::string last_failure_;
  std::map<std::string, Task> tasks_;   ///< every trial not yet terminal, by backend id
  std::map<int, Worker> workers_;       ///< by worker number (w<N>)
  std::set<std::string> logged_;        ///< tag + message already said by log_once
  boost::asio::steady_timer scan_timer_;
  bool scan_armed_ = false;
  std::chrono::steady_clock::time_point scan_due_{};
  double scan_interval_s_ = 0;
  bool stop_written_ = false;  ///< pool/stop is there (nothing to run): idle workers exit
  bool no_more_work_ = false;  ///< the engine said no more work will come (until the next submit)
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace dlsweep::sched
