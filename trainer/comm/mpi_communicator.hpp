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
  /// Completes outstanding requests and finalises MPI.
  ~MpiCommunicator() override;

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
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> pending_;
};

}  // namespace dlsweep::trainer::comm
