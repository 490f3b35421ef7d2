// cli_driver.hpp — the portable Slurm driver: sbatch, squeue --json, sacct, scancel
// and scontrol run as child processes (slurm/command.hpp: no shell, deadline, own process
// group). Works with any Slurm whose squeue has --json (21.08+).
//
// Facts it relies on (verified on Slurm 22.05, see tests/schedulers/slurm/data/):
//  - `sbatch --parsable FILE` prints "JOBID" or "JOBID;CLUSTER".
//  - `squeue --json` costs one controller RPC (REQUEST_JOB_INFO) whatever the filters; 22.05
//    ignores -j with --json, so the caller filters. When the controller is unreachable it
//    exits 0 with an "errors" entry, which parse_squeue_json turns into an Error.
//  - `sacct` needs slurmdbd; without it ("accounting storage is disabled") the driver falls
//    back to `sacct -c` (the jobcomp/filetxt log, read locally, no RPC), where array tasks
//    appear under their own job ids only.
//  - `scancel` accepts several ids and array expressions ("12_[4-9]") in one call.
#pragma once

#include <atomic>
#include <map>
#include <string>

#include "schedulers/slurm/command.hpp"
#include "schedulers/slurm/driver.hpp"

namespace dlsweep::sched::slurm {

class CliDriver final : public Driver {
 public:
  explicit CliDriver(const SlurmOptions& options);

  std::string_view name() const override { return "cli"; }
  DriverResult<std::uint32_t> submit(const SubmitRequest& req) override;
  DriverResult<void> test_only(const SubmitRequest& req) override;
  DriverResult<std::vector<JobRecord>> query(const std::vector<std::uint32_t>& job_ids) override;
  DriverResult<std::vector<JobRecord>> list_jobs() override;
  DriverResult<std::vector<JobRecord>> accounting(const std::vector<std::string>& native_ids) override;
  DriverResult<void> cancel(const std::vector<std::string>& native_ids) override;
  DriverResult<int> max_array_size() override;
  /// `sacctmgr -nP show assoc` and `show qos` (10 s at most each); nullopt when neither answers.
  std::optional<KnownLimit> submit_limit(const std::string& qos) override;
  void interrupt() override { interrupted_ = true; }

 private:
  /// Runs a command; a start failure, timeout or non-zero exit becomes a DriverError whose
  /// message quotes the command and its stderr. `stop_on_stderr`: see run_command; a command
  /// stopped so is a transient DriverError (not a timeout) whose text is its stderr.
  DriverResult<CommandOutput> run(const std::vector<std::string>& argv, bool accept_nonzero = false,
                                  const std::vector<std::string>& stop_on_stderr = {});

  std::map<std::string, std::string> env_;  ///< SLURM_CONF when options.slurm_conf is set
  double timeout_s_;
  std::atomic<bool> interrupted_{false};
  enum class Sacct { unknown, dbd, jobcomp, none } sacct_ = Sacct::unknown;
};

/// Whether a Slurm client's error message means "try again later" (controller down, busy,
/// timed out) rather than "this request is wrong".
bool is_transient_slurm_error(std::string_view stderr_text);

}  // namespace dlsweep::sched::slurm
