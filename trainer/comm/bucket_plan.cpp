#include "trainer/comm/bucket_plan.hpp"

#include <algorithm>
#include <cmath>

namespace dlsweep::trainer::comm {

BucketPlan plan_buckets(std::span<const std::int64_t> offsets, std::int64_t arena_size, std::int64_t cap_floats) {
  BucketPlan p;
  p.bucket_of.assign(offsets.size(), 0);
  const std::int64_t cap = std::max<std::int64_t>(cap_floats, 1);
  std::int64_t end = arena_size;
  BucketSpan cur;
  for (std::size_t i = offsets.size(); i-- > 0;) {
    cur.offset = offsets[i];
    cur.size = end - cur.offset;
    ++cur.tensors;
    p.bucket_of[i] = p.buckets.size();
    if (cur.size >= cap || i == 0) {
      p.buckets.push_back(cur);
      end = cur.offset;
      cur = BucketSpan{};
    }
  }
  return p;
}

std::int64_t bucket_cap_floats(double bucket_mb) {
  const double f = bucket_mb * 1024.0 * 1024.0 / sizeof(float);
  if (!(f >= 1.0)) return 1;
  if (f > 9.0e18) return static_cast<std::int64_t>(9.0e18);
  return static_cast<std::int64_t>(f);
}

BucketTracker::BucketTracker(const BucketPlan& plan)
    : plan_(plan),
      seen_(plan.buckets.size(), 0),
      launched_(plan.buckets.size(), 0),
      tensor_seen_(plan.bucket_of.size(), 0) {}

void BucketTracker::reset() {
  std::fill(seen_.begin(), seen_.end(), 0);
  std::fill(launched_.begin(), launched_.end(), 0);
  std::fill(tensor_seen_.begin(), tensor_seen_.end(), 0);
}

void BucketTracker::ready(std::span<const std::size_t> tensors, std::vector<std::size_t>& launch) {
  for (std::size_t i : tensors) {
    if (i >= tensor_seen_.size() || tensor_seen_[i]) continue;
    tensor_seen_[i] = 1;
    const std::size_t b = plan_.bucket_of[i];
    if (++seen_[b] == plan_.buckets[b].tensors && !launched_[b]) {
      launched_[b] = 1;
      launch.push_back(b);
    }
  }
}

void BucketTracker::flush(std::vector<std::size_t>& launch) {
  for (std::size_t b = 0; b < launched_.size(); ++b)
    if (!launched_[b]) {
      launched_[b] = 1;
      launch.push_back(b);
    }
}

}  // namespace dlsweep::trainer::comm
