// backend.hpp — the Backend interface: where trial programs run (local processes, Slurm
// jobs; the tests' timer-driven fake is tests/support/fake_backend.hpp).
//
// Contract:
//  - Backends never touch the database or trial states. They run jobs and report what
//    happened as JobEvents, delivered through the handler on the io_context the backend
//    was built with (never from another thread), and always posted: never from inside
//    submit(), cancel() or adopt() — the caller may be walking its jobs when it calls
//    (tests/schedulers/backend_conformance_test.cpp checks it).
//  - submit() never blocks on the job. It returns the backend's job id at once; the job may
//    then wait (queued) until the backend has room, and later emits `started` and exactly
//    one terminal event (`exited`, `cancelled` or `lost`).
//  - The backend enforces its own concurrency bound (max_concurrent): never more than that
//    many jobs running at once, whatever the caller submits.
//  - cancel() of a finished or unknown job is a no-op. Cancelling a running job asks it to
//    stop (SIGTERM, then SIGKILL after a grace period) and emits `cancelled` when it is gone.
//  - Every job carries its token "study/trial/attempt" so a job whose id never reached the
//    database can still be recognised.
//  - A backend that knows why a queued job waits (Slurm's pending reason) may emit
//    `pending` whenever that reason changes; it is never terminal and may be ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched {

struct JobSpec {
  std::string study;
  std::int64_t trial_id = 0;
  int attempt = 0;
  /// The trial's number in its study (what users read: "trial 3", trial-0003/); -1 unknown.
  /// Names only: trial_id (the database's) identifies the job.
  std::int64_t number = -1;
  std::vector<std::string> argv;            ///< program and arguments; never through a shell
  std::filesystem::path workdir;            ///< the trial dir: stdout.log / stderr.log go here
  std::map<std::string, std::string> env;   ///< added to the inherited environment
  int ranks = 1;                            ///< > 1: launched under mpirun -np ranks
  /// "" (native MPI launch), "mpirun", "srun" or "torchrun": see schedulers/launch.hpp.
  /// Non-native launchers get MASTER_ADDR/MASTER_PORT and the torch.distributed rank variables.
  std::string launcher;
  /// Slurm's time-limit warning (USR2) reaches the program always (dlsweep-train handles it),
  /// or only once the program has asked for it by creating protocol::kPreemptHandlerFile
  /// (dlsweep_trial.on_preempt does): Python's default action for USR2 is to die.
  bool warn_always = true;
  double timeout_s = 0;                     ///< 0: none; else killed (SIGTERM, then SIGKILL)

  /// "study/trial/attempt": carried in job names so a lost job can be re-adopted.
  std::string token() const;
};

enum class JobEventKind {
  queued,    ///< accepted, waiting for room
  started,   ///< the program is running
  exited,    ///< the program ended by itself: see exit_code / signal
  cancelled, ///< ended because cancel() was called (or the job hit its timeout: see message)
  lost,      ///< the backend lost track of it (failed to start, node died, ...)
  requeued,  ///< it ran and was put back in the queue (preemption, time-limit warning +
             ///< checkpoint, `scontrol requeue`); `started` follows when it runs again.
             ///< Not terminal: the same attempt continues from its checkpoint.
  pending,   ///< still waiting; `message` is the scheduler's reason, just changed ("Priority",
             ///< "launch failed requeued held"), `pending_class` how it reads. Not terminal.
};
std::string_view to_string(JobEventKind k);

/// How the reason of a `pending` event reads.
enum class PendingClass {
  routine,    ///< waits its turn: Priority, Resources, None, BeginTime (after a requeue)
  throttled,  ///< held back by the study's own max_concurrent (Slurm: JobArrayTaskLimit)
  notable,    ///< worth telling the user: held, nodes down or drained, a QOS or account limit, ...
};

struct JobEvent {
  std::string job_id;
  std::int64_t trial_id = 0;
  int attempt = 0;
  JobEventKind kind = JobEventKind::queued;
  int exit_code = 0;       ///< for exited: the exit status (if not signalled)
  int signal = 0;          ///< for exited: the terminating signal, 0 if none
  std::string message;     ///< human-readable detail
  std::string native_id;   ///< the scheduler's own id ("1234_5" for a Slurm array task); may be empty
  bool cannot_start = false;  ///< for lost: the program could not be started at all (not found,
                              ///< not executable): retrying cannot help
  PendingClass pending_class = PendingClass::routine;  ///< for pending
  bool launch_failed = false;  ///< for lost: the scheduler tried to start the job and could not
                               ///< (Slurm: held after a failed launch, cancelled by the backend):
                               ///< a failed attempt, even for a job adopted on resume
};

/// The one way an event is made: the job, its trial and attempt, what happened; the other
/// fields as the kind needs them.
JobEvent job_event(std::string job_id, std::int64_t trial_id, int attempt, JobEventKind kind, std::string message = {},
                   std::string native_id = {}, int exit_code = 0, int signal = 0);

using EventHandler = std::function<void(const JobEvent&)>;

/// A job of a study still known to the scheduler after the orchestrator that submitted it
/// died (resume): batch-scheduler jobs outlive their submitter.
struct SurvivingJob {
  std::string token;      ///< "study/trial/attempt", "" if it could not be read back
  std::string native_id;  ///< the scheduler's id ("1234_5"), what adopt() takes
  std::string state;      ///< the scheduler's word for it ("PENDING", "RUNNING", ...)
  /// Listed, but already ended (COMPLETED, FAILED, ... kept in the scheduler's table a while
  /// after the end): adoptable for its outcome, never anything to cancel.
  bool ended = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual void set_event_handler(EventHandler h) = 0;
  virtual Result<std::string> submit(const JobSpec& job) = 0;
  virtual void cancel(const std::string& job_id) = 0;
  /// Jobs submitted and not yet terminal (queued + running).
  virtual std::size_t active() const = 0;
  /// The backend's concurrency bound.
  virtual std::size_t max_concurrent() const = 0;
  /// How many jobs the caller may have submitted and not finished at once. Backends that
  /// hold jobs back themselves (Slurm: array throttle) allow more than max_concurrent, so
  /// that a whole batch can go out as one array.
  virtual std::size_t submit_window() const { return max_concurrent(); }
  /// What the site allows, once the backend learned it from a refusal ("the site allows 4
  /// jobs per user (QOSMaxSubmitJobPerUserLimit)"); "" when nothing limits it. Jobs over
  /// the limit wait in the backend (they get no `queued` event) and go out as others end.
  virtual std::string capacity_note() const { return {}; }

  /// `submit --dry-run`: writes under `out_dir` exactly what submitting `jobs` (all in one
  /// turn) would send — the backend's own planning and rendering (Slurm: every batch script
  /// and index file, split as submit would split them; local: the command lines with their
  /// launcher) — and runs, submits and creates nothing else. Returns one line per file
  /// written, to show the user. Jobs are validated as submit() validates them.
  virtual Result<std::vector<std::string>> dry_run(const std::vector<JobSpec>& jobs,
                                                   const std::filesystem::path& out_dir) = 0;

  // --- resume. Local and fake jobs are the orchestrator's children: they die, or are
  // stopped, with it. A batch scheduler's jobs run on; resume follows them instead of
  // starting the trials again.

  /// Whether jobs keep running when the orchestrator dies.
  virtual bool jobs_outlive_orchestrator() const { return false; }
  /// The engine will submit nothing more: every trial it ran has ended (the sweep finished).
  /// A backend with helpers that outlive trials (pilot workers) tells them to go now, and
  /// drops whatever only watched them, so that the orchestrator exits at once. Default: nothing.
  virtual void no_more_work() {}
  /// Stops what trials of a dead orchestrator left running on this machine, before `resume`
  /// relaunches them or `cancel` marks them CANCELLED: SIGTERM, and SIGKILL after `grace_s`.
  /// Returns how many processes were running. Default: nothing (a batch scheduler's jobs
  /// are followed or cancelled through the scheduler, never killed here).
  virtual std::size_t stop_orphans(const std::vector<std::filesystem::path>& trial_dirs, double grace_s) {
    (void)trial_dirs;
    (void)grace_s;
    return 0;
  }
  /// Before anything is queued: would the scheduler accept a job like `sample` at all?
  /// (Slurm: `sbatch --test-only` of the rendered script.) An Error names the study key
  /// to fix (`backend.partition`). Synchronous; call before the event loop runs.
  virtual Status preflight(const JobSpec& sample) {
    (void)sample;
    return {};
  }
  /// The study's jobs the scheduler still holds (pending or running). Blocks; call before
  /// the event loop runs.
  virtual Result<std::vector<SurvivingJob>> surviving_jobs(const std::string& /*study*/) {
    return std::vector<SurvivingJob>{};
  }
  /// Follows a job submitted by an earlier orchestrator (`native_id`: found by
  /// surviving_jobs() or recorded in the database) as if submit() had made it: returns a
  /// new backend id and emits `queued`, then the usual events — the terminal one from
  /// accounting if the job already ended, `lost` if the scheduler knows nothing of it.
  /// `spec` gives study, trial and attempt; nothing is submitted.
  /// `submit --as-job`: runs `job` (the orchestrator itself) as a job of its own, through
  /// the same rendering, quoting and preflight as trial jobs, asking for what an
  /// orchestrator needs rather than what a trial needs. Blocks; returns the scheduler's id.
  /// Default: refused — a backend without a queue has nowhere to send it.
  virtual Result<std::string> submit_orchestrator(const JobSpec& job) {
    return fail("this backend cannot run the orchestrator as a job", "submit --as-job for " + job.study,
                "use a batch scheduler's backend (kind: slurm), or run `dlsweep submit` inside an allocation");
  }
  /// Offline `dlsweep cancel` (no orchestrator is running): cancels jobs an earlier
  /// orchestrator submitted, by the native ids recorded in the database, through the
  /// scheduler the study names (its configuration, its driver). Blocks; call without an
  /// event loop. Default: nothing to cancel — jobs that do not outlive their orchestrator
  /// died with it (leftover processes are recovery's to stop).
  virtual Status cancel_detached(const std::vector<std::string>& native_ids) {
    (void)native_ids;
    return {};
  }
  virtual Result<std::string> adopt(const JobSpec& spec, const std::string& native_id) {
    return fail("this backend cannot follow jobs of another orchestrator", "adopting " + native_id + " for " + spec.token(),
                "requeue the trial instead");
  }
};

/// For dry_run(): writes `out_dir`/commands.sh, one line per job that runs it by hand
/// (`cd DIR && env K=V... ARGV`, every word quoted), `argvs[i]` being job i's command line
/// as the backend launches it. Returns the line to show.
Result<std::vector<std::string>> write_command_lines(const std::vector<JobSpec>& jobs,
                                                     const std::vector<std::vector<std::string>>& argvs,
                                                     const std::filesystem::path& out_dir);

}  // namespace dlsweep::sched
