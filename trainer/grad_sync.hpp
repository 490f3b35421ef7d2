// grad_sync.hpp — data-parallel gradient averaging with fused buckets that overlap backward
// (the Horovod/PyTorch-DDP scheme; docs/math.md#gradient-allreduce).
//
// The gradient arena is cut into buckets of about `bucket_mb` MiB of consecutive tensors
// (comm/bucket_plan.hpp, shared with the NCCL path), grouped from the last tensor backward (backward produces the last layer's gradients first).
// Because tensors are laid out in index order, a bucket is one contiguous span of the arena:
// one MPI_Iallreduce, no packing. During backward, Model::backward's on_ready reports tensors;
// when every tensor of a bucket is final its allreduce is started at once, and every report
// lets the transport progress, so communication runs while the earlier layers' gradients are
// computed. finish() starts any bucket never reported (a model that reports late or not at
// all still gets correct sums) and waits: the time spent there is the allreduce time NOT
// hidden by the overlap.
//
// Buckets are started in the same order on every rank (backward is deterministic), as the
// Communicator contract requires. With `measure`, each bucket's local squared norm is summed
// before it is reduced (the per-rank |G_small|² of the gradient noise scale).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/result.hpp"
#include "trainer/comm/bucket_plan.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/models/parameter_set.hpp"

namespace dlsweep::trainer {

class GradSync {
 public:
  GradSync(comm::Communicator& comm, const models::ParameterSet& params, double bucket_mb);

  /// Before backward. `measure`: also sum the local squared norm of the gradient.
  void begin(bool measure);
  /// Called from Model::backward's on_ready.
  void ready(std::span<const std::size_t> tensors);
  /// After backward: starts the remaining buckets, waits for all. Returns the seconds spent
  /// waiting (exposed communication).
  Result<double> finish();
  /// Σ g² of this rank's gradient before reduction (valid after finish() of a measured step).
  double local_norm_sq() const { return local_norm_sq_; }
  std::size_t buckets() const { return plan_.buckets.size(); }

 private:
  Status start(const comm::BucketSpan& b);
  void start_launched();

  comm::Communicator& comm_;
  const models::ParameterSet& params_;
  comm::BucketPlan plan_;
  comm::BucketTracker tracker_;
  std::vector<std::size_t> launch_;     ///< buckets to start now (capacity reserved: no allocation per step)
  bool measure_ = false;
  double local_norm_sq_ = 0;
  std::optional<Error> error_;          ///< the first failure inside ready()
  std::vector<float> staging_;          ///< host copy of the gradient when the arenas are device memory
};

}  // namespace dlsweep::trainer
