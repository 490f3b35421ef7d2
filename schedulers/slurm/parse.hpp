// parse.hpp — pure parsers of what the Slurm controller says about jobs: `squeue
// --json`, `sacct -P` lines, `scontrol show config`, job state names and array task
// expressions. No I/O: every function takes text and returns values, so each is tested on
// outputs captured from a real controller (tests/schedulers/slurm/data/).
//
// Invariants:
//  - A reply that carries an error (squeue --json prints `"errors": [...]` with an empty job
//    list and exit status 0 when the controller is unreachable) is an Error, never an empty
//    list: an unreachable controller must not look like "all jobs vanished".
//  - Exit status is kept as a raw wait status (what squeue --json and libslurm report: exit
//    3 is 768); sacct's "3:0" is converted to the same form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched::slurm {

/// A job's state, reduced to what the backend acts on. Flags that Slurm prints in place of
/// the base state (COMPLETING, CONFIGURING, REQUEUED, ...) map to the phase they stand for.
enum class JobState {
  pending,        ///< waiting (includes CONFIGURING, POWER_UP_NODE)
  running,        ///< the batch script runs (includes SIGNALING, RESIZING, UPDATE_DB)
  suspended,      ///< started, then suspended/stopped
  completing,     ///< ended, the controller is still cleaning up: not final yet
  requeued,       ///< being put back in the queue (REQUEUED, REQUEUE_FED)
  held,           ///< requeued and held (REQUEUE_HOLD, SPECIAL_EXIT, RESV_DEL_HOLD)
  completed,      ///< final: exit status 0
  failed,         ///< final: non-zero exit status
  cancelled,      ///< final
  timeout,        ///< final: hit its time limit
  node_fail,      ///< final
  preempted,      ///< final (not requeued)
  boot_fail,      ///< final
  deadline,       ///< final
  out_of_memory,  ///< final
  unknown,        ///< a name this version does not know: treated as not final
};

/// Slurm's own word for the state ("RUNNING", "OUT_OF_MEMORY", ...).
std::string_view to_string(JobState s);
/// Maps Slurm's state names (squeue, sacct, job_state_string) to JobState. sacct's
/// "CANCELLED by 0" is accepted. Unknown names give JobState::unknown.
JobState parse_job_state(std::string_view name);
/// True for states after which the job never runs again.
bool is_final(JobState s);

/// One record of the controller's job table, or one line of accounting.
struct JobRecord {
  std::uint32_t job_id = 0;                    ///< the record's own id; 0 if unknown (sacct "12_3")
  std::uint32_t array_job_id = 0;              ///< 0: not part of an array
  std::optional<std::uint32_t> array_task_id;  ///< nullopt: plain job, or a meta record of pending tasks
  std::vector<std::uint32_t> pending_tasks;    ///< for a meta record: the tasks it stands for
  JobState state = JobState::unknown;
  std::string state_name;                      ///< as Slurm printed it
  int wait_status = 0;                         ///< raw wait status (exit 3 -> 768, signal 9 -> 9)
  int restart_count = 0;
  std::string reason;                          ///< state_reason ("JobArrayTaskLimit", ...)
  /// state_description: the controller's own words when it has more to say than the reason
  /// code ("launch failed requeued held" with reason JobHeldUser; "Nodes required for job
  /// are DOWN, DRAINED ..." with reason Resources). What squeue's %r prints when set.
  std::string reason_detail;
  std::string name;                            ///< job name
  std::string comment;

  /// "12_3" for an array task, "12_[4-9]" for a meta record, "12" for a plain job.
  std::string native_id() const;
};

/// Parses `squeue --json` (OpenAPI v0.0.37/38 layout: {"errors": [...], "jobs": [...]}).
/// An error entry, a missing "jobs" list or malformed JSON is an Error.
Result<std::vector<JobRecord>> parse_squeue_json(std::string_view text);

/// Parses `sacct -P -n -o JobID,State,ExitCode` (optionally with more columns after these
/// three, which are ignored). JobID may be "15", "12_3" or "12_3.batch" (steps are
/// skipped); ExitCode "3:0" (code:signal). Blank lines are skipped.
Result<std::vector<JobRecord>> parse_sacct(std::string_view text);

/// Reads MaxArraySize from `scontrol show config` output.
Result<int> parse_max_array_size(std::string_view scontrol_show_config);

/// Expands an array task expression as Slurm prints it: "0-5%2", "[1,3,5-7]", "0-15:4".
/// The throttle suffix is ignored. Refuses more than `limit` tasks.
Result<std::vector<std::uint32_t>> parse_array_tasks(std::string_view expr, std::size_t limit = 10'000'000);

/// The compact form of a set of task ids: {1,2,3,7} -> "1-3,7". Input need not be sorted.
std::string format_array_tasks(std::vector<std::uint32_t> tasks);

/// Exit code and signal of a raw wait status, shell style: a signalled job reports
/// 128 + signal as its exit code (so it never looks like success).
struct ExitInfo {
  int exit_code = 0;
  int signal = 0;
};
ExitInfo decode_wait_status(int wait_status);

}  // namespace dlsweep::sched::slurm
