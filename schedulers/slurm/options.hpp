// options.hpp — how dlsweep asks Slurm for resources, and the checks that keep a
// study value from ever becoming code.
//
// Trust levels (documented for users in the README):
//  - `setup` lines are written into the batch script verbatim: they are shell code (module
//    loads, conda activation) and must come from the site admin or the person who runs
//    dlsweep, never from data. They are refused only if they hold a NUL byte.
//  - Everything else (partition, account, qos, mem, constraint, gpus_per_node, extra_sbatch,
//    and every JobSpec field: argv, env, workdir, study) is data: it is validated and then
//    quoted for the place it goes (sbatch's parser or bash), or refused with an Error that
//    names the field and the fix.
//  - extra_sbatch lines must read `#SBATCH --option` or `#SBATCH --option=value` (or
//    `--option value`); the value is taken literally (quotes are part of it) and re-quoted.
//    Options dlsweep sets itself (array, job-name, output, error, open-mode, comment, chdir,
//    signal, requeue, wrap, parsable) are refused there.
#pragma once

#include <cstddef>
#include <filesystem>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched {

struct SlurmOptions {
  std::string driver = "cli";            ///< "cli" (sbatch/squeue/scancel) or "api" (libslurm)
  std::string slurm_conf;                ///< SLURM_CONF for the commands and libslurm; "" = the environment's
  std::string partition, account, qos;   ///< "" = not requested
  int time_limit = 0;                    ///< minutes, used when a job has no timeout_s; 0 = partition default
  int nodes = 0;                         ///< --nodes; 0 = not requested
  int ntasks_per_node = 0;               ///< --ntasks-per-node; 0 = --ntasks=ranks
  int cpus_per_task = 0;                 ///< --cpus-per-task; 0 = not requested
  std::string gpus_per_node;             ///< --gpus-per-node: "4" or "a100:4"
  std::string gpus_per_task;             ///< --gpus-per-task: "1" or "a100:1"
  int cpus_per_gpu = 0;                  ///< --cpus-per-gpu; 0 = not requested (excludes cpus_per_task)
  std::string gpu_bind;                  ///< srun --gpu-bind= ("closest", "single:1", "map_gpu:0,1")
  std::string cpu_bind;                  ///< srun --cpu-bind= ("cores", "rank", "map_cpu:0,4")
  std::string mpi;                       ///< srun --mpi=: pmix | pmi2 | none; "" = pmix for dlsweep-train,
                                         ///< none for launcher srun (torch.distributed needs no PMI)
  std::string mem;                       ///< --mem: "4000", "16G"
  std::string constraint;                ///< --constraint
  std::vector<std::string> extra_sbatch; ///< whole lines, "#SBATCH --option=value"
  std::vector<std::string> setup;        ///< shell lines run before the trial (trusted, verbatim)
  std::filesystem::path template_path;   ///< "" = find_default_template()
  std::filesystem::path script_dir;      ///< rendered scripts, index files, slurm-*.out (required)
  bool create_script_dir = true;         ///< false for a dry run: the backend creates nothing
  std::size_t max_concurrent = 1;        ///< bound on running trials (array %throttle); 0 = 1
  std::size_t submit_window = 100000;    ///< jobs the engine may hand over at once
  int signal_lead_s = 120;               ///< --signal=B:USR2@N; 0 = none; >= the time limit: half of it
  bool requeue = true;                   ///< --requeue, and the script requeues itself after USR2 + exit 75
  double poll_min_s = 2;                 ///< first poll delay; the delay doubles while nothing changes
  double poll_max_s = 60;                ///< ... up to this
  double command_timeout_s = 60;         ///< a Slurm command (or libslurm call) taking longer is a failure
  double submit_give_up_s = 900;         ///< unreachable controller: jobs are `lost` after this long unsubmitted
  int vanish_polls = 3;                  ///< polls a job must be missing from squeue and sacct to be `lost`
  /// > 0: pilot workers (slurm/pool_backend.hpp): this many long-lived allocations run the
  /// trials one after another; 0: one job (array task) per trial.
  int workers = 0;
  double worker_idle_s = 120;            ///< a pilot worker with nothing to run exits after this long
  /// Pilot workers keep the Optuna-style runner (`python3 -m dlsweep_optuna`, one rank)
  /// imported between trials instead of starting Python afresh for each.
  bool keep_imported = false;
};

/// Checks every option; errors name the option ("slurm.partition") and the fix.
Status validate_options(const SlurmOptions& o);
/// validate_options for the keys a study file gives (script_dir is the backend's own: the
/// registry sets it under the study's directory); the error's `where` is the study key
/// under `backend:` ("partition", "time", "extra_sbatch[1]").
Status validate_study_options(SlurmOptions o);

/// Megabytes for a validated --mem value ("16G" -> 16384, "4000" -> 4000, "512K" -> 1).
std::uint64_t mem_megabytes(std::string_view mem);

/// One extra_sbatch line rewritten with its value quoted for sbatch, or an Error.
Result<std::string> normalize_extra_sbatch(const std::string& line, std::size_t index);

}  // namespace dlsweep::sched
