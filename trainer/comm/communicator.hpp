// communicator.hpp — collectives between the ranks of a data-parallel run. Implementations:
// local (one rank, local_communicator.hpp), MPI (mpi_communicator.hpp) and, in CUDA builds,
// NCCL (nccl_communicator.hpp, bootstrapped over MPI by nccl_bootstrap.hpp), chosen in one
// registry (comm_registry.hpp).
//
// Contract:
//  - every rank calls the same collectives in the same order with the same sizes;
//  - allreduce_sum leaves the element-wise sum over ranks in every rank's buffer (in place),
//    and gives bit-identical results on every rank;
//  - start_allreduce_sum is the non-blocking form: the sum lands in the buffer by the next
//    wait_all(); until then the caller must neither read nor write the buffer. progress()
//    lets the transport advance started collectives (MPI moves non-blocking collectives only
//    inside MPI calls), so callers sprinkle it through long computations to get overlap;
//  - broadcast copies root's buffer to every rank;
//  - the device form (reduces_device_buffers(): NCCL): start_device_allreduce_sum sums a
//    DEVICE array in place, after the work already enqueued on the caller's stream (a
//    cudaStream_t passed as void*) and on the communicator's own stream, without the host
//    waiting; device_wait_all(stream) makes the caller's stream wait (on the device) for every
//    started device sum: work enqueued there afterwards (the optimizer) sees the sums. Until
//    then nothing on the caller's stream may read or write those buffers. Device sums are
//    started in the same order on every rank, like the host ones;
//  - host_staged_bytes() counts the bytes a communicator copied between host and device for
//    its collectives (host-staged sums); the device form stages none (tests check it);
//  - errors (a dead peer, a failed transport) come back as Status, never as an abort.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace dlsweep::trainer::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Status allreduce_sum(std::span<float> data) = 0;
  virtual Status allreduce_sum(std::span<double> data) = 0;
  virtual Status broadcast(std::span<float> data, int root) = 0;
  virtual Status broadcast(std::span<double> data, int root) = 0;
  virtual Status barrier() = 0;
  /// Starts an in-place sum of `data` over ranks (see the contract above).
  virtual Status start_allreduce_sum(std::span<float> data) = 0;
  /// Advances started collectives without blocking.
  virtual void progress() {}
  /// Completes every started collective.
  virtual Status wait_all() = 0;

  /// True when start_device_allreduce_sum reduces device memory in place (see the contract).
  virtual bool reduces_device_buffers() const { return false; }
  /// Starts an in-place sum of the device array `data`, ordered after the work on `stream`.
  virtual Status start_device_allreduce_sum(std::span<float> data, void* stream) {
    (void)data;
    (void)stream;
    return fail(std::string(name()) + " reduces host buffers only", "comm", "reduce a host copy (GradSync stages it)");
  }
  /// Makes `stream` wait, on the device, for every started device sum (the host does not block).
  virtual Status device_wait_all(void* stream) {
    (void)stream;
    return {};
  }
  /// Bytes copied between host and device by this communicator's collectives so far.
  virtual std::uint64_t host_staged_bytes() const { return 0; }
};

}  // namespace dlsweep::trainer::comm
