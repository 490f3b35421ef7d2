// driver.hpp — the four things SlurmBackend asks of a Slurm controller, behind one
// interface with two implementations: the CLI driver (sbatch/squeue/scancel/scontrol/sacct
// run as child processes, no shell) and the libslurm driver (the C API, when built with it).
// The registry (slurm/drivers.cpp) picks one by name.
//
// Contract:
//  - Every call is synchronous and bounded by the driver's command timeout; the backend
//    runs them on its worker thread, one at a time, so a driver needs no locking of its own.
//  - submit() accepts one batch script (possibly an array). The script text carries the
//    #SBATCH lines; the structured fields carry the same request for drivers that cannot
//    parse them (libslurm). Returns the job id (the array's id for an array).
//  - query() returns every record the controller has for the given job ids (array tasks,
//    the meta record of still-pending tasks) in ONE controller RPC; records of other jobs
//    may be included (the caller filters). An unreachable controller is an Error, never an
//    empty list. list_jobs() is the same without a filter (for find_jobs()).
//  - accounting() asks accounting (sacct) about ids that squeue no longer shows; an empty
//    answer means "not known there either".
//  - cancel() cancels the given ids ("12", "12_3", "12_[4-9,11]") in as few calls as the
//    driver can; unknown ids are not an error.
//  - interrupt() may be called from another thread: a call in progress returns early.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "schedulers/slurm/options.hpp"
#include "schedulers/slurm/site_limit.hpp"
#include "schedulers/slurm/parse.hpp"

namespace dlsweep::sched::slurm {

/// One sbatch submission, in both forms (script text and fields).
struct SubmitRequest {
  std::string script;                 ///< the whole batch script, #SBATCH lines included
  std::filesystem::path script_path;  ///< where the script was written (the CLI driver submits this file)
  std::filesystem::path work_dir;     ///< initial directory of the batch script (absolute)
  std::string job_name;
  std::string comment;
  std::string array;                  ///< "0-9%2"; "" for a plain job
  std::string std_out;                ///< --output pattern (absolute)
  std::string partition, account, qos, constraint, mem, gpus_per_node, gpus_per_task;
  int time_limit_min = 0;             ///< 0: not set
  int nodes = 0, ntasks = 0, ntasks_per_node = 0, cpus_per_task = 0, cpus_per_gpu = 0;
  int signal_lead_s = 0;              ///< 0: no warning signal; else USR2 to the batch shell
  bool requeue = true;
};

/// Why a call failed: `transient` errors (controller unreachable, timeout) are retried by the
/// backend; others are final for the jobs concerned.
struct DriverError {
  Error error;
  bool transient = false;
};

template <class T>
using DriverResult = std::expected<T, DriverError>;

class Driver {
 public:
  virtual ~Driver() = default;
  virtual std::string_view name() const = 0;
  virtual DriverResult<std::uint32_t> submit(const SubmitRequest& req) = 0;
  /// Asks the controller whether it would accept `req` (sbatch --test-only), queueing
  /// nothing. The error's text is the controller's own refusal (explain_refusal() maps it
  /// to a study key). A driver that cannot ask accepts (the default).
  virtual DriverResult<void> test_only(const SubmitRequest& req) {
    (void)req;
    return {};
  }
  virtual DriverResult<std::vector<JobRecord>> query(const std::vector<std::uint32_t>& job_ids) = 0;
  virtual DriverResult<std::vector<JobRecord>> list_jobs() = 0;
  virtual DriverResult<std::vector<JobRecord>> accounting(const std::vector<std::string>& native_ids) = 0;
  virtual DriverResult<void> cancel(const std::vector<std::string>& native_ids) = 0;
  /// The controller's MaxArraySize (asked once, then cached by the caller).
  virtual DriverResult<int> max_array_size() = 0;
  /// The tightest submit limit the site's accounting states for this user and `qos` (""
  /// for Slurm's default QOS, "normal"), when the user may read it (sacctmgr); nullopt
  /// when none is set or it cannot be read (no slurmdbd). The default: cannot be read.
  virtual std::optional<KnownLimit> submit_limit(const std::string& qos) {
    (void)qos;
    return std::nullopt;
  }
  virtual void interrupt() = 0;
};

/// Builds the driver named in options.driver ("cli" or "api"). "api" fails with a clear
/// Error when dlsweep was built without libslurm.
Result<std::unique_ptr<Driver>> make_driver(const SlurmOptions& options);

/// Whether a driver is compiled in ("cli" always; "api" only with libslurm).
bool driver_available(std::string_view name);

}  // namespace dlsweep::sched::slurm
