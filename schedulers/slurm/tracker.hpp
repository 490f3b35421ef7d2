// tracker.hpp — what SlurmBackend knows about the tasks it submitted, and the pure
// rules that turn the controller's job records into job events. No I/O, no clock: it is
// fed the records of each poll (and of accounting) and returns the changes to report, so
// every rule below is tested with plain values.
//
// Rules (per task; "task" = one trial = one array task or one plain job):
//  - PENDING / REQUEUED / held after having been reported started, or with a restart count
//    higher than seen before -> `requeued`; the next RUNNING reports `started` again.
//  - RUNNING / SUSPENDED / COMPLETING -> `started` once per run.
//  - Final states -> exactly one terminal event (preceded by `started` if the run was never
//    seen, except for a job cancelled while pending):
//      COMPLETED, FAILED  -> exited (exit code / signal from the wait status)
//      FAILED with reason JobLaunchFailure -> lost "could not be launched"
//      CANCELLED          -> cancelled ("cancelled", or "cancelled outside dlsweep")
//      TIMEOUT, DEADLINE  -> cancelled "hit the time limit (TIMEOUT)" / "... (DEADLINE)"
//      OUT_OF_MEMORY      -> exited, signal 9, "out of memory (OUT_OF_MEMORY)"
//      NODE_FAIL, PREEMPTED, BOOT_FAIL -> lost, with the reason
//  - A task we cancelled while pending that is missing from squeue and accounting ->
//    cancelled (Slurm forgets such array tasks at once).
//  - Waiting tasks: `pending` whenever the reason squeue shows changes (first sighting
//    included; a run resets it), message = that reason (shown_reason), with its class.
//  - A task Slurm holds after a failed launch ("launch failed requeued held",
//    held_after_failed_launch) -> `pending` with `cancel` set: the backend scancels it (a
//    release would need an operator for JobHeldAdmin, and a failed launch usually drained
//    its node: a new job, within the trial's retries, is the way on). Its end, once the
//    cancel lands (CANCELLED, or gone from squeue and accounting), is `lost` with
//    launch_failed set, not `cancelled`; no `requeued` is reported for it. A cancel asked by
//    dlsweep's caller wins: then it ends `cancelled` as usual.
//  - A task missing from a successful squeue answer is looked up in accounting; one missing
//    from both for `vanish_polls` polls in a row -> lost "vanished from the controller".
//    A failed squeue (controller down) changes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedulers/backend.hpp"
#include "schedulers/slurm/parse.hpp"

namespace dlsweep::sched::slurm {

struct TaskChange {
  std::string id;         ///< the backend's job id
  std::string native_id;  ///< "1234_5" or "1234"
  JobEventKind kind = JobEventKind::queued;
  int exit_code = 0;
  int signal = 0;
  std::string message;
  PendingClass pending_class = PendingClass::routine;  ///< for pending
  bool cancel = false;         ///< the backend must scancel this task (held after a failed launch)
  bool launch_failed = false;  ///< for lost: it was held after a failed launch and cancelled
};

class Tracker {
 public:
  explicit Tracker(int vanish_polls = 3) : vanish_polls_(vanish_polls) {}

  /// Starts tracking a task accepted by the controller: array task `task` of job `job_id`,
  /// or the plain job `job_id` when task is nullopt.
  void add(const std::string& id, std::uint32_t job_id, std::optional<std::uint32_t> task);
  /// Marks a task as cancelled by us (its CANCELLED state then reads "cancelled").
  void cancel_requested(const std::string& id);

  /// Applies one successful squeue answer. Returns the changes, in order.
  std::vector<TaskChange> observe(const std::vector<JobRecord>& records);
  /// Ids to ask accounting about: the live tasks the last observe() did not see
  /// ("12_3", and the task's own job id when known, since sacct -c knows only those).
  std::vector<std::string> missing_native_ids() const;
  /// Applies accounting's answer (ok = false: accounting failed) to the missing tasks.
  std::vector<TaskChange> observe_accounting(const std::vector<JobRecord>& records, bool ok = true);

  bool tracked(const std::string& id) const { return tasks_.count(id) != 0; }
  /// Stops following a task (it ends by itself, and nobody waits for its end).
  void forget(const std::string& id);
  bool done(const std::string& id) const;
  bool started(const std::string& id) const;
  std::string native_id(const std::string& id) const;
  /// Job ids (array ids) with at least one task not finished: what the next poll asks for.
  std::vector<std::uint32_t> live_job_ids() const;
  std::size_t live() const;
  /// Live tasks per job id.
  std::map<std::uint32_t, std::vector<std::string>> live_by_job() const;
  /// Array task number of a tracked task (nullopt for a plain job).
  std::optional<std::uint32_t> task_of(const std::string& id) const;

  /// Turns a final record into the terminal change for a task (the rules above).
  static TaskChange terminal_change(const JobRecord& rec, bool cancel_requested);

 private:
  struct Task {
    std::string id;
    std::uint32_t job_id = 0;
    std::optional<std::uint32_t> task;
    std::uint32_t own_id = 0;  ///< the task's own job id, once squeue showed it
    bool started = false;
    bool done = false;
    bool cancel_requested = false;
    bool seen = false;  ///< in the last observe()
    int restarts = 0;
    int missing = 0;
    std::string reason;          ///< the pending reason last reported ("" none yet, or running)
    std::string launch_failure;  ///< held after a failed launch: that reason (we cancel it)
  };
  using Key = std::pair<std::uint32_t, std::int64_t>;  ///< (job id, task or -1)

  void apply(Task& t, const JobRecord& rec, std::vector<TaskChange>& out);
  /// A waiting task held after a failed launch: reported (`pending`, with `cancel` unless a
  /// cancel was asked already) and remembered; false for any other waiting task.
  bool note_failed_launch(Task& t, const JobRecord& rec, std::vector<TaskChange>& out);
  /// The terminal change of a task held after a failed launch that we cancelled.
  TaskChange failed_launch_end(Task& t) const;
  TaskChange change(const Task& t, JobEventKind kind, std::string message) const;
  static std::string native(const Task& t);

  int vanish_polls_;
  std::map<std::string, Task> tasks_;
  std::map<Key, std::string> by_key_;
};

}  // namespace dlsweep::sched::slurm
