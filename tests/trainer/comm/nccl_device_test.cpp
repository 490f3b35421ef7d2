// comm: nccl and nccl-hierarchical on DEVICE buffers, on a GPU (test_trainer_cuda; SKIPPED
// without one): GradSync over the CUDA backend's arenas takes the device path, reduces every
// bucket in place on the device, ordered after the work on the backend's stream, and copies
// NOTHING between host and device: neither GradSync (staged_bytes) nor the communicator
// (host_staged_bytes, which does count a host-staged sum: checked too) moves a byte. One rank
// (the GPU machines have one GPU; NCCL refuses two ranks on one device), so a sum is the
// identity: what is checked is the path, the order and the copies, not the arithmetic of many
// ranks (that is NCCL's; the hierarchical plan's is hierarchical_plan_test.cpp's).
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/comm/comm_registry.hpp"
#include "trainer/grad_sync.hpp"
#include "trainer/kernels/cuda/cuda_kernels.hpp"
#include "trainer/models/parameter_set.hpp"

using namespace dlsweep::trainer;

namespace {

void check_device_sums(const char* kind) {
  INFO("comm: " << kind);
  if (comm::launched_with_ranks()) {
    WARN("under a multi-rank launcher: the one-rank device test is skipped");
    return;
  }
  auto backend = kernels::cuda::make_cuda_kernels();
  REQUIRE(backend);
  kernels::Memory& mem = (*backend)->memory();
  REQUIRE(mem.native_stream() != nullptr);
  auto c = comm::make_communicator(kind);
  INFO((c ? std::string("made") : c.error().what));
  REQUIRE(c);
  REQUIRE((*c)->reduces_device_buffers());
  models::ParameterSet ps;
  ps.add("a", 256, 256, false);
  ps.add("b", 1, 256, true);
  ps.add("c", 256, 256, false);
  ps.add("d", 1, 10, true);
  ps.finalize(mem);
  std::vector<float> h(static_cast<std::size_t>(ps.arena_size()));
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i % 113) * 0.25f;
  GradSync sync(**c, ps, 0.25);
  REQUIRE(sync.path() == GradSync::Path::device);
  REQUIRE(sync.buckets() == 2);
  for (int step = 0; step < 3; ++step) {
    mem.upload(ps.grads(), h.data(), ps.arena_size());
    // Enqueued on the backend's stream and not waited for by the host: the sums must see it.
    mem.scale(ps.grads(), 2.0f, ps.arena_size());
    sync.begin(false);
    const std::size_t last[] = {3, 2};
    sync.ready(last);
    const std::size_t first[] = {1, 0};
    sync.ready(first);
    auto waited = sync.finish();
    REQUIRE(waited);
    CHECK(sync.launched() == std::vector<std::size_t>{0, 1});
    // Read back through the backend's stream: ordered after the sums by the device wait.
    const auto back = mem.to_host(ps.grads(), ps.arena_size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < h.size(); ++i) wrong += back[i] != 2.0f * h[i];
    CHECK(wrong == 0);
  }
  CHECK(sync.staged_bytes() == 0);
  CHECK((*c)->host_staged_bytes() == 0);  // device sums: not one byte through the host
  if (std::string_view(kind) == "nccl") {
    // The counter counts: a host array is staged (both ways).
    std::vector<float> host(1000, 1.0f);
    REQUIRE((*c)->allreduce_sum(std::span<float>(host)));
    CHECK((*c)->host_staged_bytes() == 2 * 1000 * sizeof(float));
  }
}

}  // namespace

TEST_CASE("comm nccl on device buffers: in place, ordered on the backend's stream, nothing staged",
          "[nccl][device]") {
  check_device_sums("nccl");
}

TEST_CASE("comm nccl-hierarchical on one node: one NCCL allreduce in place, nothing staged", "[nccl][device]") {
  check_device_sums("nccl-hierarchical");
}
