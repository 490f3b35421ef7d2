// nccl_communicator.hpp — `comm: nccl`: the Communicator over NCCL, bootstrapped over MPI
// (CUDA + MPI builds only; comm_registry.cpp is the one place that chooses it).
//
// Start-up: MPI_COMM_WORLD (MpiCommunicator), the device from the local rank
// (kernels/cuda/device_select.hpp), rank 0's ncclUniqueId broadcast over MPI (nccl_bootstrap.hpp),
// ncclCommInitRank. The trainer's gradients live in host memory today (the model runs on the
// CPU), so this communicator is host-staged: a sum copies the span to the device on its own
// stream, runs ncclAllReduce there and copies back; start_allreduce_sum only enqueues, so
// buckets started during backward (GradSync) overlap the rest of backward, and wait_all()
// synchronises the stream. Broadcasts of doubles and barriers go over MPI. The device staging
// buffer grows to the largest step seen (when a step outgrows it, the started buckets are
// completed first, then it is reallocated: only the first step pays).
// NOT YET RUN: written and compiled without a GPU (README "GPU").
#pragma once

#include <memory>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm {

/// The NCCL communicator of this rank (see above). No CUDA header here: the registry that
/// includes this compiles like the rest of the trainer.
Result<std::unique_ptr<Communicator>> make_nccl_communicator();

}  // namespace dlsweep::trainer::comm
