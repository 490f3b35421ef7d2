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
//
// Where the gradients are reduced (path(), chosen once from the arenas' Memory and the
// communicator; docs/gpu.md "Many GPUs"):
//  - host: the arenas are host memory (CPU backends): the spans are reduced where they lie;
//  - device: device arenas and a communicator that reduces device buffers (comm: nccl,
//    nccl-hierarchical): each bucket is summed IN PLACE on the device, ordered after the
//    backward work on the backend's stream (Memory::native_stream) and run on the
//    communicator's own stream; finish() only makes the backend's stream wait for the sums
//    (nothing is copied to the host and the host does not block: the optimizer, enqueued after
//    it on the same stream, is the only thing that waits);
//  - staged: device arenas and a host-only communicator (comm: mpi on a GPU, so ranks may share
//    one GPU): each bucket is downloaded into page-locked host memory (Memory::allocate_staging)
//    when it is ready, reduced there, and the arena is uploaded back in finish().
// staged_bytes() counts the bytes this GradSync copied between host and device (0 on the
// host and device paths; tests check it), launched() the order of the last step's buckets.
#pragma once

#include <cstdint>
#include <memory>
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

  enum class Path { host, device, staged };
  Path path() const { return path_; }
  /// "host", "device" or "staged (pinned host)".
  static const char* path_name(Path p);
  /// Bytes copied between host and device by this GradSync since it was made.
  std::uint64_t staged_bytes() const { return staged_bytes_; }
  /// The buckets of the current (or last) step in the order their sums were started.
  const std::vector<std::size_t>& launched() const { return launched_; }
  const comm::BucketPlan& plan() const { return plan_; }

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
  Path path_ = Path::host;
  void* stream_ = nullptr;              ///< the backend's stream (device path)
  std::shared_ptr<float[]> staging_;    ///< page-locked host copy of the gradient (staged path)
  std::uint64_t staged_bytes_ = 0;
  std::vector<std::size_t> launched_;   ///< capacity reserved: no allocation per step
};

}  // namespace dlsweep::trainer
