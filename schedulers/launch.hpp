// launch.hpp — how a trial's ranks are started: the launcher (mpirun, srun, torchrun) and
// the environment torch.distributed expects on every rank.
//
// Launchers:
//  - native (""): the embedded trainer's MPI launch, unchanged: `mpirun -np N` on the local
//    backend, `srun --mpi=... --ntasks=N` on Slurm; a 1-rank trial runs directly.
//  - mpirun / srun: every rank runs the user's program through the rank shim (below), which
//    sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE from the launcher's own variables
//    (OMPI_COMM_WORLD_*, SLURM_PROCID/LOCALID/NTASKS/STEP_TASKS_PER_NODE).
//  - torchrun: one torchrun per node (`srun --ntasks-per-node=1` on Slurm), static rendezvous
//    at MASTER_ADDR:MASTER_PORT on the first node, node rank SLURM_NODEID, and the program
//    given to torchrun with --no_python (the study's command is run as written). torchrun
//    sets the rank variables itself.
// With every launcher but native, MASTER_ADDR and MASTER_PORT are set (unless the trial's env
// sets them): locally 127.0.0.1 and a port free when the job starts, on Slurm the first node
// of the allocation and a port free there (chosen by the batch script at run time).
//
// The shim is one constant bash program run as `bash -c SHIM dlsweep-launch MODE ...`: no
// study value is ever part of shell code; the user's argv are positional parameters.
// MODE torchrun-node starts torchrun with USR2 ignored (under srun every process of the step
// gets the warning, and torchrun would die of it; a worker that handles USR2 installs its
// own handler) and, because torchrun reports any failed worker as exit 1, returns 75 when
// its workers stopped resumably after a signal (each torchrun-worker records its exit status
// under $DLSWEEP_TRIAL_DIR/.launch/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::sched {

inline constexpr std::string_view kLaunchers[] = {"mpirun", "srun", "torchrun"};

/// The bash program behind every non-native launch (see the header comment).
const std::string& launch_shim();

/// "" or one of kLaunchers.
bool valid_launcher(std::string_view launcher);

/// Whether the local backend starts a job under mpirun: more than one rank (not torchrun), or
/// launcher mpirun.
bool local_runs_mpirun(int ranks, std::string_view launcher);

/// Open MPI's point-to-point layer for a job the local backend starts under mpirun: "ob1",
/// shared memory between the ranks of one machine, as OMPI_MCA_pml unless someone chose
/// (schedulers/local/mpi_env.hpp says when, and what it saves); MPICH ignores it.
inline constexpr const char* kLocalOmpiPml = "ob1";

/// What the local backend executes for a job: argv unchanged for a native 1-rank job;
/// `mpirun -np N ...` (native, or the rank shim for launcher mpirun); torchrun with a static
/// rendezvous at the job's MASTER_ADDR:MASTER_PORT. An Error for srun (it needs a Slurm
/// allocation).
Result<std::vector<std::string>> local_launch_argv(const std::vector<std::string>& argv, int ranks,
                                                   std::string_view launcher, const std::string& mpirun,
                                                   bool as_root);

/// Options of the srun line (Slurm): mpi plugin and binding.
struct SrunOptions {
  std::string mpi;            ///< --mpi=; "" = pmix for the native launch, none for launcher srun
  std::string gpu_bind;       ///< --gpu-bind= ("" = not set)
  std::string cpu_bind;       ///< --cpu-bind=
};

/// Not a trial launcher (a study cannot name it): the allocation is sized for `ranks` tasks
/// but the program runs once, in the batch script — a pilot worker, which starts its trials'
/// ranks as srun steps itself (slurm/pool_worker.hpp).
inline constexpr std::string_view kLauncherAllocationOnly = "dlsweep-worker";

/// Shell words the batch script puts before "$@" (already quoted; "" = run "$@" directly).
/// `nodes`: the allocation's node count (torchrun: one agent per node, ranks/nodes workers
/// each; the caller has checked that nodes divides ranks).
std::string slurm_launch_prefix(int ranks, int nodes, std::string_view launcher, const SrunOptions& srun);

/// Picks a TCP port on 127.0.0.1 that nothing listens on now, avoiding `taken` (ports handed
/// to jobs still running). 0 if none could be found.
int pick_free_port(const std::vector<int>& taken);

}  // namespace dlsweep::sched
