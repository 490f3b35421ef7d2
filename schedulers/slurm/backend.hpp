// backend.hpp — runs each job as a task of a Slurm job array.
//
// Contract (on top of backend.hpp):
//  - submit() validates the job (empty argv, bad env names, NUL bytes, ... are refused at
//    once, no event), creates its trial dir and returns "slurm-<pid>.<seq>" without talking
//    to Slurm. Jobs submitted in the same turn of the io_context go out together on the next
//    turn: one array per resource shape (ranks, time limit), split above MaxArraySize, with
//    %throttle so that never more than max_concurrent of the backend's jobs run (see
//    slurm/plan.hpp). Jobs that do not fit yet wait in the backend (no event).
//  - Events: `queued` when the controller accepted the job (native_id "1234_5"), `started`,
//    `requeued` (then `started` again), then one of `exited`, `cancelled`, `lost` — mapping
//    in slurm/tracker.hpp. Every event after acceptance carries native_id. While a job
//    waits, `pending` each time squeue's reason for it changes (slurm/reason.hpp).
//  - A job Slurm holds after a failed launch is cancelled by the backend itself (one scancel
//    with the turn's other cancels) and ends `lost` with launch_failed: a failed attempt.
//  - Before sbatch, the batch script (<script_dir>/<tag>.sh) and its index file (<tag>.index:
//    task -> token, trial dir, env, argv) are written; a requeued task reads the same line,
//    so a requeue or resubmission never runs another trial. The array's --comment is
//    "dlsweep:<tag>": after a submission that timed out, the backend looks the array up by
//    comment before submitting again, so an ambiguous sbatch never yields two arrays.
//  - Polling: one driver query (one controller RPC) per tick for all live jobs, at
//    poll_min_s, doubling to poll_max_s while nothing changes, back to poll_min_s on any
//    change, submission or cancel. A failed query (controller down, timeout) is logged and
//    retried with the same back-off; no job is reported lost because of it. Jobs missing
//    from squeue are looked up in accounting; missing from both for vanish_polls polls:
//    `lost`.
//  - A job's timeout_s runs from each `started`: the backend cancels it when it is over
//    (Slurm's --time, whole minutes rounded up, stays as the backstop for jobs no
//    orchestrator follows), and its `cancelled` reads "timed out after N s".
//  - cancel() of a job waiting in the backend emits `cancelled` at once; of a submitted job,
//    all cancels of one turn go out as one driver call (array expressions); `cancelled`
//    follows when the controller reports it. Unknown or finished ids: no-op.
//  - Controller calls run on one worker thread; state and events stay on the io_context's
//    thread. The io_context is kept busy only while jobs are live or calls are in flight.
//  - The destructor does not cancel jobs: Slurm jobs outlive the orchestrator by design
//    (resume re-adopts them with find_jobs()). No events are delivered after destruction.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/slurm/driver.hpp"
#include "schedulers/slurm/options.hpp"
#include "schedulers/slurm/plan.hpp"
#include "schedulers/slurm/script.hpp"
#include "schedulers/slurm/site_limit.hpp"
#include "schedulers/slurm/tracker.hpp"

namespace dlsweep::sched {

/// A job of a study found on the controller (for resume).
struct SlurmFoundJob {
  std::string native_id;                ///< "1234_5" or "1234"
  std::uint32_t job_id = 0;             ///< the array (or plain job) id
  std::optional<std::uint32_t> task;    ///< array task, nullopt for a plain job
  std::string state;                    ///< Slurm's word ("PENDING", "RUNNING", ...)
  std::string comment;                  ///< "dlsweep:<tag>"
  std::filesystem::path index_file;     ///< <script_dir>/<tag>.index, "" if the comment is not ours
  std::string token;                    ///< "study/trial/attempt" from the index, "" if unreadable
};

class SlurmBackend final : public Backend {
 public:
  /// Validates the options, loads the template and builds the driver. Errors name the
  /// option and the fix.
  static Result<std::unique_ptr<SlurmBackend>> create(boost::asio::io_context& io, SlurmOptions options);
  /// Same with a given driver (tests).
  static Result<std::unique_ptr<SlurmBackend>> create(boost::asio::io_context& io, SlurmOptions options,
                                                      std::unique_ptr<slurm::Driver> driver);
  ~SlurmBackend() override;
  SlurmBackend(const SlurmBackend&) = delete;
  SlurmBackend& operator=(const SlurmBackend&) = delete;

  std::string_view name() const override { return "slurm"; }
  void set_event_handler(EventHandler h) override { handler_ = std::move(h); }
  Result<std::string> submit(const JobSpec& job) override;
  void cancel(const std::string& job_id) override;
  std::size_t active() const override { return jobs_.size(); }
  std::size_t max_concurrent() const override { return options_.max_concurrent; }
  std::size_t submit_window() const override { return options_.submit_window; }

  /// Where diagnostics go (controller unreachable, retries). Default: stderr.
  void set_log_handler(std::function<void(const std::string&)> h) { log_ = std::move(h); }

  /// The controller's jobs of `study` (job name "dlsweep:<study>"), from one query; pending
  /// array tasks are listed one by one. Blocks (up to the command timeout); call it before
  /// submitting, e.g. on resume.
  Result<std::vector<SlurmFoundJob>> find_jobs(const std::string& study);

  /// Tracks a job that is already on the controller (found with find_jobs() on resume) as
  /// if this backend had submitted it: returns a new backend id, emits `queued` (with the
  /// native id), then the usual events. `spec` supplies trial id, attempt and study; it is
  /// not submitted. Fails on a malformed native id ("1234" or "1234_5").
  Result<std::string> adopt(const JobSpec& spec, const std::string& native_id) override;

  Status preflight(const JobSpec& sample) override;
  /// One driver cancel (scancel with the study's slurm_conf, or libslurm) for all ids; the
  /// controller's refusal or silence is an error naming the ids.
  Status cancel_detached(const std::vector<std::string>& native_ids) override;
  /// One plain job named "dlsweep:<study>.orchestrator" (never taken for a trial's job):
  /// 1 CPU, 1 GB, one node, no GPUs, the partition's own time limit, --requeue, and the
  /// study's partition/account/qos/setup/signal lead (USR2 makes the orchestrator detach
  /// and exit 75; the script requeues it and the restarted one resumes). `sbatch
  /// --test-only` first: a refusal names the study key, as preflight() does.
  Result<std::string> submit_orchestrator(const JobSpec& job) override;
  /// Every batch script and index file submit would send for `jobs`, in order: the same
  /// planning (one array per shape, split above the controller's MaxArraySize — asked of the
  /// controller, Slurm's default 1001 when it does not answer — throttled to max_concurrent)
  /// and rendering, each array planned as if the ones before it had drained. The scripts are
  /// rendered for the study's script dir (their output and index paths are submit's) and
  /// written to out_dir as dry-run-N.sh / dry-run-N.index.
  Result<std::vector<std::string>> dry_run(const std::vector<JobSpec>& jobs,
                                           const std::filesystem::path& out_dir) override;
  bool jobs_outlive_orchestrator() const override { return true; }
  /// find_jobs() in the Backend's terms.
  Result<std::vector<SurvivingJob>> surviving_jobs(const std::string& study) override;

  /// "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit)" once sbatch refused
  /// a submission for a site limit (slurm/site_limit.hpp), else "".
  std::string capacity_note() const override;

  /// Forgets every job the controller accepted (no scancel, no more events: they end by
  /// themselves, as pilot workers told `stop` do) and stops polling, so that nothing of this
  /// backend keeps the event loop alive but a call already in flight. Jobs not yet accepted
  /// stay.
  void stop_following();

  /// The Slurm id of a job once accepted ("1234_5"), else "".
  std::string native_id(const std::string& job_id) const;
  const SlurmOptions& options() const { return options_; }
  /// What submit() refuses at once: empty argv or workdir, ranks < 1, a negative timeout,
  /// values the index file cannot hold. (The pilot workers' backend checks trials with it too.)
  static Status check_job(const JobSpec& spec);

  struct Stats {
    std::size_t submissions = 0;       ///< sbatch calls (or libslurm submits) that succeeded
    std::size_t submit_failures = 0;
    std::size_t queries = 0;           ///< squeue calls
    std::size_t query_failures = 0;
    std::size_t accounting_queries = 0;
    std::size_t cancel_calls = 0;
    std::size_t max_array_size = 0;    ///< as read from the controller (0: not yet)
    std::size_t capacity_refusals = 0; ///< submissions refused for a site limit (retried later)
  };
  const Stats& stats() const { return stats_; }

 private:
  static slurm::Shape shape_of(const JobSpec& spec);
  /// The batch of one planned array (tasks not yet filled in).
  static slurm::BatchRequest request_for(const slurm::PlannedArray& a, std::string tag,
                                         const std::filesystem::path& script_dir);
  struct Job;
  struct Batch;

  SlurmBackend(boost::asio::io_context& io, SlurmOptions options, std::string template_text,
               std::unique_ptr<slurm::Driver> driver);

  template <class F, class Done>
  void run_on_worker(F work, Done done);
  void emit(const Job& job, JobEventKind kind, std::string message, std::string native_id = {}, int exit_code = 0,
            int signal = 0, bool cannot_start = false, PendingClass pending_class = PendingClass::routine,
            bool launch_failed = false);
  void log(const std::string& msg);

  void schedule_flush();
  void flush();
  void fetch_max_array_size();
  Status prepare(Batch& batch);
  void start_next_submission();
  void on_submitted(Batch& batch, slurm::DriverResult<std::uint32_t> r);
  void retry_later(double delay_s, std::function<void()> what);
  /// A refusal for a site limit: the batch's jobs wait again (no event), the limit is learned.
  void on_capacity_refusal(Batch& batch, const slurm::SiteLimit& limit);
  /// The study's jobs in Slurm or on their way there (accepted + in batches).
  std::size_t in_slurm() const;
  /// Nothing can go out now for a site limit: flush again when a probe is due.
  void arm_capacity_retry();
  /// Drops the batches not being sent whose every job was cancelled: `cancelled` for each.
  void drop_cancelled_batches();
  double now_s() const;

  void schedule_poll(double delay_s);
  void poll();
  void on_changes(const std::vector<slurm::TaskChange>& changes);
  void after_poll(bool changed);

  /// Arms the job's timeout (spec.timeout_s, from now): on expiry it is cancelled, and its
  /// `cancelled` says "timed out after N s".
  void start_timeout(Job& job);
  void schedule_cancel_flush();
  void flush_cancels();
  /// On destruction: one bounded scancel of the jobs whose cancel was asked and not confirmed.
  void send_last_cancels();

  boost::asio::io_context& io_;
  SlurmOptions options_;
  std::string template_text_;
  std::unique_ptr<slurm::Driver> driver_;
  EventHandler handler_;
  std::function<void(const std::string&)> log_;
  slurm::Tracker tracker_;
  Stats stats_;

  std::uint64_t seq_ = 0;
  std::uint64_t batch_seq_ = 0;
  std::map<std::string, std::unique_ptr<Job>> jobs_;  ///< every job not yet terminal
  std::deque<std::string> waiting_;                   ///< not yet in a batch, FIFO
  std::deque<std::unique_ptr<Batch>> batches_;        ///< prepared, not yet accepted (front = in flight)
  std::vector<std::string> to_cancel_;                ///< submitted jobs to scancel next turn
  std::optional<std::size_t> max_array_;
  slurm::SubmitCapacity capacity_;
  /// The one pending "try the site again" timer: re-armed for an earlier time, cancelled once
  /// nothing waits (a pending timer keeps the event loop, and so the orchestrator, alive).
  std::shared_ptr<boost::asio::steady_timer> capacity_timer_;
  double capacity_retry_at_ = 0;  ///< when it fires (now_s() clock)
  void cancel_capacity_retry();
  bool last_cancels_ = false;  ///< send_last_cancels() may build a driver (not with a test's driver)
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  bool fetching_max_array_ = false;
  bool flush_posted_ = false;
  bool cancel_posted_ = false;
  bool submit_in_flight_ = false;
  bool poll_in_flight_ = false;
  bool cancel_in_flight_ = false;
  double poll_interval_s_;
  std::optional<std::chrono::steady_clock::time_point> poll_due_;
  boost::asio::steady_timer poll_timer_;
  std::vector<std::weak_ptr<boost::asio::steady_timer>> retry_timers_;  ///< cancelled on destruction
  boost::asio::thread_pool worker_{1};
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  ///< handlers hold a weak_ptr
};

}  // namespace dlsweep::sched
