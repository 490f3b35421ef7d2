// mpi_env.hpp — Open MPI's point-to-point layer for the trials the local backend starts under
// mpirun. On one machine the ranks talk through shared memory; left to itself Open MPI first
// probes the network fabrics (UCX, OFI, PSM), 0.2 s of every multi-rank start on a 2-core
// machine (a quarter-epoch MLP branch at 2 ranks: 0.53 s -> 0.35 s with OMPI_MCA_pml=ob1). So
// the backend sets OMPI_MCA_pml=ob1 (schedulers/launch.hpp kLocalOmpiPml) unless someone chose:
//   - the orchestrator's environment sets OMPI_MCA_pml (the trial's own env wins anyway);
//   - an MCA parameter file Open MPI reads chooses `pml` (a site's `pml = ucx` for CUDA-aware
//     MPI, say; not an exclusion such as Debian's own `pml = ^ucx`): $OMPI_MCA_mca_base_param_files, else ~/.openmpi/mca-params.conf and the
//     system's /etc/openmpi/openmpi-mca-params.conf (Debian's path);
//   - dlsweep runs inside a Slurm allocation of several nodes (SLURM_JOB_NUM_NODES or
//     SLURM_NNODES > 1): mpirun would spread the ranks over them, where the fabric matters.
// The decision is pure over an environment lookup and a file reader.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dlsweep::sched {

/// Whether an MCA parameter file's text chooses `pml` (a line `pml = ...`; `#` starts a
/// comment); an exclusion (`pml = ^ucx`, in Debian's system file) leaves the choice to Open MPI.
bool mca_text_sets_pml(std::string_view text);

using EnvLookup = std::function<const char*(const char*)>;
using FileReader = std::function<std::optional<std::string>(const std::string&)>;

/// Whether the local backend sets OMPI_MCA_pml for a job it starts under mpirun (see above).
bool local_sets_ompi_pml(const EnvLookup& env, const FileReader& read);

/// The same over this process's environment and files.
bool local_sets_ompi_pml();

}  // namespace dlsweep::sched
