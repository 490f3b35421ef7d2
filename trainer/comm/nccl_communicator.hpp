// nccl_communicator.hpp — `comm: nccl`: the Communicator over NCCL, bootstrapped over MPI
// (CUDA + MPI builds only; comm_registry.cpp is the one place that chooses it).
//
// Start-up: MPI_COMM_WORLD (MpiCommunicator), the device from the local rank
// (gpu/device_select.hpp), rank 0's ncclUniqueId broadcast over MPI (nccl_bootstrap.hpp),
// ncclCommInitRank. The trainer's gradients live in host memory today (the model runs on the
// CPU), so this communicator is host-staged: a sum copies the span to the device on its own
// stream, runs ncclAllReduce there and copies back; start_allreduce_sum only enqueues, so
// buckets started during backward (GradSync) overlap the rest of backward, and wait_all()
// synchronises the stream. Broadcasts of doubles and barriers go over MPI. The device staging
// buffer grows to the largest step seen (when a step outgrows it, the started buckets are
// completed first, then it is reallocated: only the first step pays).
// NOT YET RUN: written and compiled without a GPU (README "GPU").
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>

#include "trainer/comm/communicator.hpp"
#include "trainer/comm/mpi_communicator.hpp"

namespace dlsweep::trainer::comm {

class NcclCommunicator final : public Communicator {
 public:
  static Result<std::unique_ptr<NcclCommunicator>> create();
  ~NcclCommunicator() override;

  std::string_view name() const override { return "nccl"; }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  Status allreduce_sum(std::span<float> data) override;
  Status allreduce_sum(std::span<double> data) override;
  Status broadcast(std::span<float> data, int root) override;
  Status broadcast(std::span<double> data, int root) override;
  Status barrier() override;
  Status start_allreduce_sum(std::span<float> data) override;
  Status wait_all() override;
  int device() const { return device_; }

 private:
  explicit NcclCommunicator(std::unique_ptr<MpiCommunicator> mpi) : mpi_(std::move(mpi)) {}
  Status enqueue_sum(void* host, std::size_t bytes, std::size_t count, ncclDataType_t type);
  Status ensure_capacity(std::size_t bytes);

  std::unique_ptr<MpiCommunicator> mpi_;
  int device_ = 0;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* staging_ = nullptr;
  std::size_t capacity_ = 0, used_ = 0;  ///< bytes of staging_; bytes taken by started sums
  bool pending_ = false;
};

}  // namespace dlsweep::trainer::comm
