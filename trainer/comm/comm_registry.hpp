// comm_registry.hpp — picks the Communicator of a run (params.json `comm`): the only place
// that knows which implementations were built (MPI is optional at build time).
#pragma once

#include <memory>
#include <string_view>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm {

/// True when this build includes the MPI communicator.
bool mpi_built();
/// True when this build includes CUDA and NCCL (-DDLSWEEP_CUDA=ON).
bool nccl_built();

/// params.json `comm`. nccl: NCCL over all ranks; nccl_hierarchical (DL@1EF): NCCL within a
/// node, MPI across nodes.
enum class CommKind { automatic, local, mpi, nccl, nccl_hierarchical };
/// "auto", "local", "mpi", "nccl", "nccl-hierarchical"; anything else is an error listing them.
Result<CommKind> parse_comm_kind(std::string_view kind);

/// True when the process looks started by an MPI launcher with more than one rank
/// (OMPI_COMM_WORLD_SIZE of Open MPI's mpirun, PMI_SIZE of MPICH/Slurm PMI, or
/// SLURM_STEP_NUM_TASKS of an srun step, > 1).
bool launched_with_ranks();

/// This process's rank as the launcher announces it (OMPI_COMM_WORLD_RANK, PMI_RANK,
/// SLURM_PROCID of an srun step), 0 when there is none. Known before MPI is initialised, so
/// that only rank 0 opens the trial's metrics file.
int launcher_rank();

/// "local": one rank; "mpi": MPI_COMM_WORLD (error if not built with MPI); "auto": mpi when
/// launched_with_ranks(), else local. "nccl": NCCL over all ranks (nccl_communicator.hpp),
/// "nccl-hierarchical": NCCL inside a node, MPI between node leaders
/// (nccl_hierarchical_communicator.hpp); both in CUDA builds, bootstrapped over MPI (one rank
/// without MPI in the build), an error naming what is missing otherwise (no visible GPU).
Result<std::unique_ptr<Communicator>> make_communicator(std::string_view kind);

}  // namespace dlsweep::trainer::comm
