// mpi_communicator.hpp — the Communicator over MPI (Open MPI on the CPU). Built only when
// CMake finds MPI; comm_registry.cpp is the one place that chooses it.
//
// MPI is initialised with MPI_THREAD_FUNNELED (OpenMP threads never call MPI) and errors are
// returned (MPI_ERRORS_RETURN on MPI_COMM_WORLD) and turned into Status. Non-blocking sums
// are MPI_Iallreduce(MPI_IN_PLACE); progress() is MPI_Testall over the outstanding requests,
// which is what moves Open MPI's non-blocking collectives forward during computation.
// Reductions of 2 ranks are bit-identical on both (a+b = b+a); for more ranks Open MPI's
// algorithms give every rank the same result as well (each element is reduced once, then
// distributed).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "trainer/comm/communicator.hpp"

namespace dlsweep::trainer::comm {

class MpiCommunicator final : public Communicator {
 public:
  /// Initialises MPI (once per process) and wraps MPI_COMM_WORLD.
  static Result<std::unique_ptr<MpiCommunicator>> create();
  /// Completes outstanding requests; the world's communicator also finalises MPI (after every
  /// split of it is gone: destroy splits first).
  ~MpiCommunicator() override;
  /// A communicator over the ranks of this one with the same `color` (MPI_Comm_split),
  /// ranked by `key`: nccl-hierarchical's node and cross-node communicators. Collective.
  Result<std::unique_ptr<MpiCommunicator>> split(int color, int key);

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce_sum(std::span<float> data) override;
  Status allreduce_sum(std::span<double> data) override;
  Status broadcast(std::span<float> data, int root) override;
  Status broadcast(std::span<double> data, int root) override;
  Status barrier() override;
  Status start_allreduce_sum(std::span<float> data) override;
  void progress() override;
  Status wait_all() override;

 private:
  MpiCommunicator(MPI_Comm comm, bool world, int rank, int size) : comm_(comm), world_(world), rank_(rank), size_(size) {}
  MPI_Comm comm_ = MPI_COMM_WORLD;
  bool world_ = true;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> pending_;
};

}  // namespace dlsweep::trainer::comm
