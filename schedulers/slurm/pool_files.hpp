// pool_files.hpp — the files through which the orchestrator hands trials to pilot workers
// (`backend: {kind: slurm, workers: N}`) and workers report back: a shared filesystem is
// all login and compute nodes need in common, no network service.
//
// Layout under the pool directory (<study_root>/slurm/pool), one directory per task, so that a
// task moves between states in one rename (atomic on one filesystem) and its records move with it:
//   version              the layout's version (kPoolVersion); a pool of another refuses to open.
//   queue/<tag>/task     a trial waiting for a worker (JSON: v, token, script, ranks, timeout_s,
//                        estimate_s). Written by the orchestrator in queue/.<tag>.new/, then renamed.
//   scripts/<tag>.sh     the trial's batch script, rendered as for a per-trial job (not
//   scripts/<tag>.index  requeueing itself), and its index line; never moved.
//   w/<wid>/<tag>/       claimed: a worker renamed queue/<tag>/ here (rename is atomic on one
//                        filesystem: exactly one worker wins a task). In it:
//     task               as queued (rewritten without the earlier runs a worker found gone);
//     run                the worker started it (JSON: v, host, pgid, started, lease);
//     exit               it ended (JSON: v, exit_code, signal, warned, cancelled, timed_out, seconds,
//                        and not_started + error when its script could not be started);
//     cancel             the orchestrator asks the worker to stop it.
//   w/<wid>/<tag>.lease  the run's lease: a file the trial's processes hold an exclusive flock
//                        on (an inherited open file), until the last of them is gone
//                        (pool_lease.hpp). Beside the task's directory, not in it: it stays
//                        where the run left it when the task moves, for the rerun to check.
//   w/<wid>/heartbeat    the worker's last sign of life (its own clock; informative only).
//   done/<tag>/          a task once its end was reported, moved here from w/<wid>/ in one
//                        rename (kept: resume reads it); a withdrawn task too (no exit).
//   estimate             seconds the longest trial took so far (workers near their time
//                        limit take only what fits).
//   stop                 the orchestrator has no more work: idle workers exit.
//
// Every JSON record carries "v": kPoolVersion; one without it, or of another version, is
// refused with both versions named (workers outlive the orchestrator that started them: a
// dlsweep of another version must not guess at their files). No field falls back silently:
// a task without ranks is refused, not run on one.
//
// Ownership: only workers move queue -> w/<wid>; only the orchestrator moves tasks back to
// queue/ (a worker that ended) or on to done/. Nothing here talks to Slurm.
//
// A run that ended unseen (its worker, and maybe its wrapper, died with it running: a run
// record and no exit) goes back to the queue with its RunRecord appended to the task's
// `unfinished_runs`: the next worker to claim the task starts it only once every one of those
// runs is gone (pool_rerun.hpp decides, pool_lease.hpp looks), so that a trial never runs
// twice at once.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched::pool {

struct RunRecord {
  std::string host;
  long pgid = 0;
  double started = 0;                 ///< seconds since the epoch, the worker's clock
  std::string lease;                  ///< the run's lease file, relative to the pool; "": none
};

struct TaskFile {
  std::string token;                  ///< "study/trial/attempt"
  std::filesystem::path script;       ///< scripts/<tag>.sh
  int ranks = 1;
  double timeout_s = 0;               ///< 0: none (the worker enforces it)
  double estimate_s = 0;              ///< how long it may take; 0: unknown
  /// backend.keep_imported: the trial runs the Optuna-style runner (`python3 -m
  /// dlsweep_optuna ...`, one rank), which the worker keeps imported between trials
  /// (`--serve`): the command, its environment and directory are needed without the script.
  bool warm = false;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::filesystem::path trial_dir;
  /// Earlier runs of this task whose end no worker saw (put back in the queue by unclaim()).
  std::vector<RunRecord> unfinished_runs;
};

struct ExitRecord {
  int exit_code = 0;
  int signal = 0;
  bool warned = false;     ///< the time-limit warning (USR2) was passed on to the trial
  bool cancelled = false;  ///< stopped because of <tag>.cancel (or the worker's TERM)
  bool timed_out = false;  ///< stopped at timeout_s
  double seconds = 0;      ///< how long it ran
  /// The worker could not start the trial's script at all (`error` says why): not the
  /// script's own exit 127.
  bool not_started = false;
  std::string error;
};

/// The version of the pool's layout and of every record in it.
inline constexpr int kPoolVersion = 2;

/// A claimed task: which worker holds it, and what is in its directory. Claims are keyed by
/// (worker, task): a task found under two workers is two claims, never merged.
struct Claim {
  std::string worker;
  std::string tag;
  bool has_run = false, has_exit = false, has_cancel = false;
};

class PoolDir {
 public:
  explicit PoolDir(std::filesystem::path root) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path queue_dir() const { return root_ / "queue"; }
  std::filesystem::path scripts_dir() const { return root_ / "scripts"; }
  std::filesystem::path done_dir() const { return root_ / "done"; }
  std::filesystem::path workers_dir() const { return root_ / "w"; }
  std::filesystem::path worker_dir(const std::string& wid) const { return workers_dir() / wid; }
  std::filesystem::path stop_file() const { return root_ / "stop"; }
  std::filesystem::path estimate_file() const { return root_ / "estimate"; }
  std::filesystem::path version_file() const { return root_ / "version"; }
  /// queue/<tag>/: a queued task's directory; queued(tag) its task record.
  std::filesystem::path queued_dir(const std::string& tag) const { return queue_dir() / tag; }
  std::filesystem::path queued(const std::string& tag) const { return queued_dir(tag) / "task"; }
  /// w/<wid>/<tag>/: a claimed task's directory.
  std::filesystem::path claimed_dir(const std::string& wid, const std::string& tag) const {
    return worker_dir(wid) / tag;
  }
  /// done/<tag>/: a reported (or withdrawn) task's directory.
  std::filesystem::path done_task_dir(const std::string& tag) const { return done_dir() / tag; }
  /// A claimed task's record: ".task", ".run", ".exit", ".cancel" name the files in its
  /// directory; ".lease" the run's lease beside it (w/<wid>/<tag>.lease).
  std::filesystem::path in_worker(const std::string& wid, const std::string& tag, std::string_view ext) const {
    if (ext == ".lease") return worker_dir(wid) / (tag + ".lease");
    return claimed_dir(wid, tag) / std::string(ext.substr(1));
  }
  /// A lease path as RunRecord::lease holds it (relative to the pool), and back.
  std::string lease_name(const std::filesystem::path& lease) const;
  std::filesystem::path lease_path(const std::string& name) const { return root_ / name; }

  /// Creates the directories and the version file; a pool of another layout (written by
  /// another dlsweep) is refused with both versions and the fix.
  Status create() const;
  /// Whether this pool is of this dlsweep's layout (the worker asks before it takes a task).
  Status check_version() const;

  /// Writes queue/<tag>.task atomically.
  Status enqueue(const std::string& tag, const TaskFile& t) const;
  /// Tags waiting in queue/, in tag_before's order (the orchestrator's: trial numbers grow).
  std::vector<std::string> queued_tags() const;
  /// Moves queue/<tag>.task into w/<wid>/: true if this caller got it.
  bool claim(const std::string& tag, const std::string& wid) const;
  /// Back from w/<wid>/ to queue/, dropping its run/exit/cancel records: true if it moved.
  /// A run without an end (.run, no .exit) is appended to the task's unfinished_runs first
  /// (the task file is rewritten in w/<wid>/, then moved: one rename puts it back).
  bool unclaim(const std::string& tag, const std::string& wid) const;
  /// Removes a task still in queue/ (cancelled before any worker took it): true if removed
  /// (false: a worker took it first, or it is not there).
  bool withdraw(const std::string& tag) const;
  /// Moves w/<wid>/<tag>/ to done/<tag>/ in one rename (an earlier done/<tag>/ is replaced).
  Status retire(const std::string& tag, const std::string& wid) const;
  /// Every claimed task, by (worker, tag); the directories of `skip_workers` are not read.
  std::vector<Claim> claims(const std::set<std::string>& skip_workers = {}) const;
  /// The claims of one task (normally one; more only if something outside dlsweep copied files).
  std::vector<Claim> claims_of(const std::string& tag) const;
  /// Worker ids that have a directory.
  std::vector<std::string> worker_ids() const;

  /// Rewrites a task this worker has claimed (w/<wid>/<tag>.task), e.g. without the earlier
  /// runs it found gone.
  Status write_claimed(const std::string& wid, const std::string& tag, const TaskFile& t) const;
  Status write_run(const std::string& wid, const std::string& tag, const RunRecord& r) const;
  Status write_exit(const std::string& wid, const std::string& tag, const ExitRecord& e) const;
  Status request_cancel(const std::string& wid, const std::string& tag) const;

  static Result<TaskFile> read_task(const std::filesystem::path& p);
  static Result<RunRecord> read_run(const std::filesystem::path& p);
  static Result<ExitRecord> read_exit(const std::filesystem::path& p);
  /// done/<tag>.exit, if the task ended and was reported.
  std::optional<ExitRecord> done_exit(const std::string& tag) const;

  double estimate_s() const;
  Status set_estimate_s(double s) const;

 private:
  std::filesystem::path root_;
};

/// A task's name in the pool (its directory, its script, "pool:<tag>" in the events users
/// read): "trial-0003-a0" after the trial's number in its study, as its directory trial-0003/
/// is named; "t00000042-a0" after its database id when the number is unknown (number < 0),
/// as pools named every task before 2026-11-29 (their tasks keep those names). Both begin
/// with 't', what the pool's scans look for; the two forms never collide.
std::string task_tag(std::int64_t trial_id, std::int64_t number, int attempt);
/// The database-id form alone ("t00000042-a0").
std::string task_tag(std::int64_t trial_id, int attempt);
/// The queue's order of tags: runs of digits compare as numbers, the rest as text, so
/// trial-2000 comes before trial-10000 and attempt a9 before a10 (the 4-digit padding of a
/// trial number is a minimum, not a width).
bool tag_before(const std::string& a, const std::string& b);

}  // namespace dlsweep::sched::pool
