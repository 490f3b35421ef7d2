// nccl_communicator.hpp — `comm: nccl`: the Communicator over NCCL (CUDA builds;
// comm_registry.cpp is the one place that chooses it).
//
// Start-up: a host communicator (MPI_COMM_WORLD; without MPI in the build, one rank:
// LocalCommunicator), the device from the local rank (kernels/cuda/device_select.hpp),
// rank 0's ncclUniqueId broadcast over the host communicator (nccl_bootstrap.hpp),
// ncclCommInitRank, its own non-blocking stream.
//
// Sums (communicator.hpp's contract):
//  - device arrays (the GPU backend's gradient arena, through GradSync's device path):
//    start_device_allreduce_sum records an event on the caller's stream, makes the
//    communicator's stream wait for it and runs ncclAllReduce IN PLACE there; device_wait_all
//    records an event on the communicator's stream and makes the caller's stream wait for it.
//    Nothing is copied to the host and the host never blocks (host_staged_bytes() stays 0);
//  - host float arrays (a CPU model with comm: nccl): host-staged through a device buffer
//    (copy in, ncclAllReduce, copy out, all enqueued; wait_all() synchronises), counted in
//    host_staged_bytes(). The buffer grows to the largest step (the started sums are
//    completed first, then it is reallocated: only the first step pays);
//  - host doubles (the loop's per-step scalars), broadcasts and barriers go over the host
//    communicator (no device round trip for a few numbers).
#pragma once

#include <functional>
#include <memory>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm {

/// Makes the host communicator (MPI_COMM_WORLD, or one local rank).
using HostCommFactory = std::function<Result<std::unique_ptr<Communicator>>()>;

/// The NCCL communicator of this rank (see above). No CUDA header here: the registry that
/// includes this compiles like the rest of the trainer. The device is chosen before
/// `make_host` runs (no GPU: an error before MPI is initialised).
Result<std::unique_ptr<Communicator>> make_nccl_communicator(const HostCommFactory& make_host);

}  // namespace dlsweep::trainer::comm
