// api_driver.hpp — the Slurm driver over libslurm's C API (built only when libslurm
// and <slurm/slurm.h> are found; the registry in slurm/drivers.cpp is the one place that
// knows). Same contract as the CLI driver (slurm/driver.hpp), with these differences:
//  - submit() fills a job_desc_msg_t from SubmitRequest's fields: libslurm does not read
//    #SBATCH lines, so extra_sbatch is refused for this driver (validate_options). The job's
//    environment is ours (+ SLURM_CONF), like sbatch's default --export=ALL; env_size and
//    work_dir are always set (the controller rejects a batch job without an environment).
//  - query(): slurm_load_job for one array, slurm_load_job_user for several: one RPC
//    (SHOW_LOCAL: without it libslurm asks for the federation first, a second RPC).
//  - cancel(): slurm_kill_job2 per id expression ("12_[4-9]" is one call).
//  - accounting() runs sacct through the CLI driver (slurmdb's API needs slurmdbd).
//  - Calls are bounded by the controller's MessageTimeout, not by command_timeout_s, and
//    interrupt() cannot cut them short.
//  - slurm_init() is called once per process with options.slurm_conf; the API and ABI change
//    with every Slurm release, which is why the CLI driver stays the portable default.
#pragma once

#include <memory>

#include "schedulers/slurm/cli_driver.hpp"
#include "schedulers/slurm/driver.hpp"

namespace dlsweep::sched::slurm {

class ApiDriver final : public Driver {
 public:
  /// Fails when another ApiDriver in this process uses a different slurm_conf.
  static Result<std::unique_ptr<ApiDriver>> create(const SlurmOptions& options);
  ~ApiDriver() override;

  std::string_view name() const override { return "api"; }
  DriverResult<std::uint32_t> submit(const SubmitRequest& req) override;
  /// Through the CLI (`sbatch --test-only` of the same script): slurm_job_will_run's
  /// answer depends on the Slurm release, the CLI's does not.
  DriverResult<void> test_only(const SubmitRequest& req) override { return sacct_.test_only(req); }
  DriverResult<std::vector<JobRecord>> query(const std::vector<std::uint32_t>& job_ids) override;
  DriverResult<std::vector<JobRecord>> list_jobs() override;
  DriverResult<std::vector<JobRecord>> accounting(const std::vector<std::string>& native_ids) override;
  DriverResult<void> cancel(const std::vector<std::string>& native_ids) override;
  DriverResult<int> max_array_size() override;
  void interrupt() override { sacct_.interrupt(); }

 private:
  explicit ApiDriver(const SlurmOptions& options);
  SlurmOptions options_;
  CliDriver sacct_;  ///< for accounting() only
};

}  // namespace dlsweep::sched::slurm
