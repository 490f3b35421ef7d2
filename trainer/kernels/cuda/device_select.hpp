// device_select.hpp — which GPU a rank drives, from its local rank on the node. Pure: the
// environment comes in through a lookup function, the device count as a number, so both are
// faked in tests (the CUDA build passes std::getenv and cudaGetDeviceCount).
//
// Local rank, the first that is set of:
//   OMPI_COMM_WORLD_LOCAL_RANK (Open MPI's mpirun), MPI_LOCALRANKID (MPICH/Hydra),
//   SLURM_LOCALID (an srun step: only when SLURM_STEP_NUM_TASKS is set, because a batch
//   script's own SLURM_LOCALID is 0 for every rank its mpirun starts);
// none set: local rank 0 (one process). A value that is not a non-negative integer is an
// error naming the variable. Device: with one visible device (Slurm's --gpus-per-task=1 or
// a CUDA_VISIBLE_DEVICES per rank) device 0; otherwise the local rank, which must be below
// the number of visible devices (more ranks than GPUs on a node is refused: they would share).
#pragma once

#include <functional>
#include <string>

#include "common/result.hpp"

namespace dlsweep::trainer::kernels::cuda {

using EnvLookup = std::function<const char*(const char*)>;

struct LocalRank {
  int rank = 0;
  int size = 1;        ///< ranks on this node (1 when the launcher does not say)
  std::string source;  ///< the variable it came from, "" for the default
};

/// Reads the local rank and size from `env` (sizes: OMPI_COMM_WORLD_LOCAL_SIZE,
/// MPI_LOCALNRANKS, SLURM_STEP_TASKS_PER_NODE when every node has the same count, "4" or
/// "4(x2)"; otherwise size = rank + 1, i.e. unknown).
Result<LocalRank> local_rank(const EnvLookup& env);

/// The device index for `local_rank` among `device_count` visible devices.
Result<int> select_device(int local_rank, int device_count);

}  // namespace dlsweep::trainer::kernels::cuda
