// nccl_support.hpp — what the two NCCL communicators share (CUDA builds; includes CUDA's and
// NCCL's headers, so only nccl_*.cpp include it): error mapping, the rank's device, NCCL
// started over a host communicator (nccl_bootstrap.hpp), and the events that order a
// collective on the communicator's stream after the caller's work and the caller's stream after
// the collectives (the device form of communicator.hpp).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string_view>

#include "common/result.hpp"
#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm::nccl {

Status cuda_check(cudaError_t e, std::string_view what, std::string_view where);
Status nccl_check(ncclResult_t r, std::string_view what, std::string_view where);

/// This rank's GPU from the launcher's local rank (kernels/cuda/device_select.hpp), made
/// current. Errors name `where` (the params.json key that asked for a GPU).
Result<int> pick_device(std::string_view where);

/// ncclCommInitRank over the ranks of `host` (rank 0 of `host` makes the id, broadcast to all).
Result<ncclComm_t> init_over(Communicator& host, std::string_view where);

/// The stream and the two events of the device form: before(caller) orders the communicator's
/// stream after the caller's enqueued work, after(caller) the caller's stream after
/// everything enqueued on the communicator's stream. Neither blocks the host.
class StreamOrder {
 public:
  ~StreamOrder();
  Status create(std::string_view where);
  cudaStream_t stream() const { return stream_; }
  Status before(void* caller, std::string_view where);
  Status after(void* caller, std::string_view where);

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
};

}  // namespace dlsweep::trainer::comm::nccl
