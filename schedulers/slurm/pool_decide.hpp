// pool_decide.hpp — what the pilot pool's backend (pool_backend.hpp) decides, as pure
// functions over a snapshot of what it tracks and what it read in the pool's files
// (pool_files.hpp). No filesystem, no event loop, no Slurm: SlurmPoolBackend reads the files
// into a Snapshot, asks here, and carries out the answer (moves the task directories, submits
// workers, delivers the events), so that every decision is testable without a pool or a cluster.
//
//   a look at the pool (decide_scan), per claim of a task this backend tracks, in the claims' order:
//     exit record read             -> requeue (stopped with a checkpoint at the time-limit
//                                     warning, exit 75, no cancel asked) or retire with the
//                                     trial's terminal event (and `started` if never seen)
//     exit record unreadable       -> said once; the claim is otherwise read as if it had none
//     run record, not yet seen     -> `started` on that worker (resets the failed-worker count)
//     cancel asked, no cancel file -> ask the worker (write <tag>/cancel)
//   a worker's allocation ended (decide_reclaim): each of its tasks without an exit record
//     goes back to the queue; a tracked one whose cancel was asked is withdrawn from there
//     and ends `cancelled`; a started one is `requeued`; one never started says nothing.
//   how many workers (decide_workers): min(workers, tasks) alive, ended ones replaced; after
//     kMaxFailedWorkers failed in a row none is started, and with none left alive every
//     trial still waiting ends `lost` (cannot_start), naming the last failure.
//   a worker's allocation ended (decide_worker_end): how it is named, whether it failed.
//   a worker's allocation requeued by Slurm (decide_worker_requeued: an admin's requeue, a
//     preemption or node failure with requeue): its started tasks are `requeued` but stay
//     with it (the restarted worker, same id and directory, takes them back and reruns them
//     from their checkpoints); the worker is not ended (no replacement while its job lives).
//     The earlier start's run record stays until then: a run already reported started
//     (TaskView::seen_run) is never started again; the new run's record is.
//   resume: a claim of a worker not alive goes back to the queue (decide_resume_claim); a
//     task already reported ends as its record says (decide_adopted_end).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/slurm/pool_files.hpp"

namespace dlsweep::sched::pool {

/// Workers that end failing one after another (a broken setup line, the dlsweep binary missing
/// on the nodes) are not replaced for ever.
inline constexpr int kMaxFailedWorkers = 3;

/// "w3" -> 3; nullopt for anything else.
std::optional<int> worker_number(std::string_view wid);
std::string worker_id(int n);

/// An event for a task's trial, as the backend delivers it (job_event + the flags).
struct Event {
  JobEventKind kind = JobEventKind::queued;
  std::string message;
  int exit_code = 0;
  int signal = 0;
  bool launch_failed = false;
  bool cannot_start = false;
  bool operator==(const Event&) const = default;
};

/// A trial the backend tracks (not yet terminal).
struct TaskView {
  std::string tag;
  bool started = false;           ///< `started` was delivered for its current run
  bool cancel_requested = false;
  double timeout_s = 0;
  /// run_key() of the run last reported started (or stopped with a requeued allocation
  /// before a look saw it): a run record with this key does not start the task again.
  std::string seen_run;
};

/// Which run a run record is (host, process group, start time): a new run has a new key.
std::string run_key(const RunRecord& r);

/// A worker allocation the backend submitted or follows.
struct WorkerView {
  int number = 0;
  std::string native_id;  ///< Slurm's job id; "" until the controller accepted it
  bool ended = false;
};

/// A claim read in the pool, with its exit record when it has one (read only for tasks the
/// backend tracks): `exit` parsed, or `exit_error` why it could not be.
struct ClaimView {
  Claim claim;
  std::optional<ExitRecord> exit;
  std::string exit_error;
  /// Its run record, read (when it has one) for a tracked task not started: which run it is.
  std::optional<RunRecord> run;
};

struct Snapshot {
  std::vector<TaskView> tasks;     ///< in the backend's order (the first of a tag is the one)
  std::vector<WorkerView> workers;
  std::vector<ClaimView> claims;   ///< in the pool's order
  double longest_s = 0;            ///< the longest trial so far (the pool's estimate)
  int workers_wanted = 1;          ///< backend.workers
  int failed_in_a_row = 0;
  std::string last_failure;        ///< the last failed worker, as the give-up reason names it
};

/// One step of a look at the pool, for task `tag` claimed by `worker`.
struct ScanAction {
  enum class Kind {
    start,           ///< its run is seen: started = true, seen_run = `run`, failed_in_a_row = 0, `events`
    requeue,         ///< unclaim it (back to the queue), started = false, `events`
    retire,          ///< `estimate_s`, move it to done/, stop tracking it, `events`
    log,             ///< say `message` once for this tag (nothing else happens)
    request_cancel,  ///< write its cancel file in the worker's directory
  };
  Kind kind = Kind::log;
  std::string tag, worker;
  std::vector<Event> events;
  std::optional<double> estimate_s;  ///< retire: the longest trial so far grew to this
  std::string message;               ///< log
  std::string run;                   ///< start: run_key() of the run seen ("": unread)
};

struct ScanPlan {
  std::vector<ScanAction> actions;
  bool changed = false;  ///< anything but a log: the next look comes soon
};

/// What the look at the pool's claims in `s` does, step by step, in order (a later claim of
/// the same tag sees what the earlier ones did).
ScanPlan decide_scan(const Snapshot& s);

/// How task `t`, claimed by `worker`, ended according to `rec` (one step of decide_scan).
/// `longest_s`: the longest trial so far, for the estimate.
ScanAction decide_finish(const TaskView& t, const std::string& worker, const ExitRecord& rec, double longest_s);

/// One task of an ended worker: back in the queue, then (if tracked) what its trial hears.
struct PutBack {
  std::string tag, worker;
  bool tracked = false;
  /// Its cancel was asked: withdraw it from the queue again; withdrawn, it stops being
  /// tracked and hears this.
  std::optional<Event> if_withdrawn;
  /// Not withdrawn and it had started: started = false, and it hears this.
  std::optional<Event> requeued;
};

/// The allocation of worker `wid` ended (`why`: how): its tasks without an exit record in
/// `s.claims` go back to the queue.
std::vector<PutBack> decide_reclaim(const Snapshot& s, const std::string& wid, const std::string& why);

struct WorkerPlan {
  std::size_t live = 0;    ///< workers not ended
  std::size_t start = 0;   ///< workers to submit now (one after another; see after_failed_start)
  std::optional<Error> give_up;  ///< none is started: why
  /// With give_up and no worker alive: every trial still waiting in the queue is withdrawn
  /// and ends with this.
  std::optional<Event> end_waiting;
};

/// min(workers_wanted, tasks) workers alive; unless kMaxFailedWorkers failed in a row.
WorkerPlan decide_workers(const Snapshot& s);

/// A worker could not be submitted (`error`) with `live` workers alive: none more is started,
/// and with none alive the waiting trials end.
WorkerPlan after_failed_start(std::size_t live, Error error);

/// How a worker's allocation ended, as its tasks' requeue messages and the failure count see it.
struct WorkerEnd {
  std::string why;           ///< "Slurm job 123, exit 1"
  bool failed = false;       ///< exited non-zero or by a signal, or lost
  std::string failure;       ///< failed: the last failure, naming its log
  /// The failed-in-a-row count after this end, from the count once its tasks are reclaimed
  /// (the look before that may have seen a trial start, which resets it).
  int failed_in_a_row(int before) const { return failed ? before + 1 : 0; }
};

/// `ev`: the inner backend's terminal event for worker `ev.trial_id` (Slurm job `native_id`);
/// `log`: the worker's stderr log.
WorkerEnd decide_worker_end(const JobEvent& ev, const std::string& native_id, const std::string& log);

/// One task of a worker whose allocation Slurm requeued: it stays claimed by that worker.
struct Requeued {
  std::string tag;
  /// Not "": the task's seen_run becomes this (the earlier start's run, whose record stays
  /// until the restarted worker takes the task back).
  std::string seen_run;
  /// It had started: started = false, and it hears this.
  std::optional<Event> requeued;
};

/// Slurm requeued the allocation of worker `wid` (`why`: how the inner backend says it,
/// "requeued by Slurm (restart 1)"): its tracked tasks in `s.claims` without an exit record.
/// Those started are `requeued` (the restarted worker reruns them from their checkpoints);
/// one whose run a look has not seen yet (`run` read in its claim) only has that run
/// remembered, so that its stale record does not start it.
std::vector<Requeued> decide_worker_requeued(const Snapshot& s, const std::string& wid, const std::string& why);

/// On resume, a claim found in the pool: put back in the queue (no exit record, and its
/// worker's allocation is not alive: it waits for another), or listed as a surviving job in
/// `state` ("ENDED" with an exit record, "RUNNING" with a run record, else "PENDING").
struct ResumeClaim {
  bool put_back = false;
  std::string state;
  bool ended = false;
};
ResumeClaim decide_resume_claim(const Claim& c, bool worker_alive);

/// A task adopted on resume that had already ended and been reported (done/): its events.
std::vector<Event> decide_adopted_end(const ExitRecord& done, double timeout_s);

}  // namespace dlsweep::sched::pool
