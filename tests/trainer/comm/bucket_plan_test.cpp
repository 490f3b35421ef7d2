// Bucket logic of the gradient allreduce (comm/bucket_plan.hpp), shared by GradSync (MPI)
// and the NCCL path: which tensors go in which bucket, and the launch order as backward
// reports tensors.
#include <catch2/catch.hpp>

#include <vector>

#include "trainer/comm/bucket_plan.hpp"

using namespace dlsweep::trainer::comm;

namespace {
// Tensors of sizes 100, 10, 100, 10 (an MLP's w1 b1 w2 b2) laid out back to back.
const std::vector<std::int64_t> kOffsets = {0, 100, 110, 210};
constexpr std::int64_t kArena = 220;
}  // namespace

TEST_CASE("bucket plan: contiguous spans cut from the last tensor backward", "[comm][buckets]") {
  auto p = plan_buckets(kOffsets, kArena, 110);
  REQUIRE(p.buckets.size() == 2);
  // Bucket 0 = the last two tensors (backward's first), bucket 1 = the first two.
  CHECK(p.buckets[0].offset == 110);
  CHECK(p.buckets[0].size == 110);
  CHECK(p.buckets[0].tensors == 2);
  CHECK(p.buckets[1].offset == 0);
  CHECK(p.buckets[1].size == 110);
  CHECK(p.bucket_of == std::vector<std::size_t>{1, 1, 0, 0});
  // The buckets tile the arena exactly.
  std::int64_t covered = 0;
  for (const auto& b : p.buckets) covered += b.size;
  CHECK(covered == kArena);
}

TEST_CASE("bucket plan: tiny cap = one tensor per bucket, huge cap = one bucket", "[comm][buckets]") {
  auto each = plan_buckets(kOffsets, kArena, 1);
  REQUIRE(each.buckets.size() == 4);
  CHECK(each.bucket_of == std::vector<std::size_t>{3, 2, 1, 0});
  CHECK(each.buckets[0].size == 10);
  CHECK(each.buckets[3].size == 100);
  CHECK(plan_buckets(kOffsets, kArena, 0).buckets.size() == 4);  // cap < 1 acts as 1
  auto one = plan_buckets(kOffsets, kArena, 1 << 20);
  REQUIRE(one.buckets.size() == 1);
  CHECK(one.buckets[0].offset == 0);
  CHECK(one.buckets[0].size == kArena);
  CHECK(one.buckets[0].tensors == 4);
  CHECK(plan_buckets({}, 0, 10).buckets.empty());
}

TEST_CASE("bucket cap from MiB", "[comm][buckets]") {
  CHECK(bucket_cap_floats(4) == 1048576);
  CHECK(bucket_cap_floats(0.25) == 65536);
  CHECK(bucket_cap_floats(0) == 1);
  CHECK(bucket_cap_floats(-1) == 1);
}

TEST_CASE("bucket tracker: launches each bucket once, when its last tensor is reported", "[comm][buckets]") {
  auto p = plan_buckets(kOffsets, kArena, 110);
  BucketTracker t(p);
  std::vector<std::size_t> launch;
  const std::size_t b2[] = {3};
  t.ready(b2, launch);
  CHECK(launch.empty());  // bucket 0 also needs tensor 2
  const std::size_t again[] = {3, 3};
  t.ready(again, launch);
  CHECK(launch.empty());  // a repeated report does not count twice
  const std::size_t w2[] = {2};
  t.ready(w2, launch);
  CHECK(launch == std::vector<std::size_t>{0});
  CHECK(t.launched(0));
  CHECK_FALSE(t.launched(1));
  const std::size_t first[] = {1, 0};
  t.ready(first, launch);
  CHECK(launch == std::vector<std::size_t>{0, 1});
  std::vector<std::size_t> rest;
  t.flush(rest);
  CHECK(rest.empty());  // nothing left

  // Next step: reset, nothing reported → flush launches everything in bucket order.
  t.reset();
  CHECK_FALSE(t.launched(0));
  t.flush(rest);
  CHECK(rest == std::vector<std::size_t>{0, 1});
  const std::size_t out_of_range[] = {99};
  std::vector<std::size_t> none;
  t.ready(out_of_range, none);
  CHECK(none.empty());
}

TEST_CASE("bucket tracker: launch order follows backward, whatever the report grouping", "[comm][buckets]") {
  auto p = plan_buckets(kOffsets, kArena, 1);  // one bucket per tensor
  BucketTracker t(p);
  std::vector<std::size_t> launch;
  const std::size_t all_backward[] = {3, 2, 1, 0};
  t.ready(all_backward, launch);
  CHECK(launch == std::vector<std::size_t>{0, 1, 2, 3});
  // A model that reports layers out of order gets them launched in its report order: every
  // rank runs the same deterministic backward, so every rank launches the same sequence.
  t.reset();
  launch.clear();
  const std::size_t shuffled[] = {1, 3, 0, 2};
  t.ready(shuffled, launch);
  CHECK(launch == std::vector<std::size_t>{2, 0, 3, 1});
}
