// bucket_plan.hpp — which gradients go in which allreduce bucket, and when each bucket is
// launched: the pure logic under GradSync (MPI) and the NCCL path alike
// (docs/math.md#gradient-allreduce).
//
// Tensors lie in the gradient arena in index order. Buckets are cut from the LAST tensor
// backward (backward produces the last layer's gradients first): a bucket takes tensors
// until it holds at least `cap_floats` floats, so every bucket is one contiguous span of the
// arena (one collective, no packing) and bucket 0 holds the last tensors. A tensor larger
// than the cap is a bucket of its own.
//
// BucketTracker replays one step: report tensors as backward finalises them; it answers the
// buckets that just became complete, in completion order (launch them in that order). Since
// backward is deterministic, every rank launches the same buckets in the same order, as the
// Communicator contract requires. flush() gives the buckets never completed (a model that
// reports late or not at all), in bucket order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dlsweep::trainer::comm {

struct BucketSpan {
  std::int64_t offset = 0;  ///< first float of the arena
  std::int64_t size = 0;    ///< floats
  std::size_t tensors = 0;  ///< how many tensors it holds
};

struct BucketPlan {
  std::vector<BucketSpan> buckets;      ///< in launch order when backward runs last-to-first
  std::vector<std::size_t> bucket_of;   ///< tensor index → bucket
};

/// `offsets[i]`: where tensor i starts (increasing); `arena_size`: the arena's end;
/// `cap_floats` ≥ 1 (smaller values act as 1: one tensor per bucket).
BucketPlan plan_buckets(std::span<const std::int64_t> offsets, std::int64_t arena_size, std::int64_t cap_floats);

/// Floats in a bucket of `bucket_mb` MiB (params.json bucket_mb), at least 1.
std::int64_t bucket_cap_floats(double bucket_mb);

class BucketTracker {
 public:
  explicit BucketTracker(const BucketPlan& plan);
  /// Starts a step: nothing reported, nothing launched.
  void reset();
  /// Reports tensors as final; appends to `launch` the buckets that are now complete and not
  /// yet launched, and marks them launched. A tensor reported twice counts once.
  void ready(std::span<const std::size_t> tensors, std::vector<std::size_t>& launch);
  /// Appends every bucket not yet launched (in bucket order) and marks them launched.
  void flush(std::vector<std::size_t>& launch);
  bool launched(std::size_t bucket) const { return launched_[bucket] != 0; }

 private:
  const BucketPlan& plan_;
  std::vector<std::size_t> seen_;
  std::vector<char> launched_, tensor_seen_;
};

}  // namespace dlsweep::trainer::comm
