// GradSync's three paths (grad_sync.hpp), on the CPU with fakes: a "device" memory (host arrays
// that claim not to be host-visible, with a stream handle, counting every copy between host
// and device) and a communicator that records what it is asked and sums like two ranks with
// equal gradients (x2). Checked: which path is taken; on the device path every bucket is
// reduced IN PLACE on the arena, started as its last tensor is reported (in backward order),
// ordered on the backend's stream, finished by one device wait and never by a host wait, and
// nothing is copied to the host (the GPU run of the same check: nccl_device_test.cpp); on the
// staged path buckets go through page-locked host staging and come back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/comm/communicator.hpp"
#include "trainer/grad_sync.hpp"
#include "trainer/kernels/memory.hpp"
#include "trainer/models/parameter_set.hpp"
#include "trainer/optim/tensor_math.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;
namespace k = dlsweep::trainer::kernels;

namespace {

int g_stream_token = 0;  // its address is the fake stream

class CountingDeviceMemory final : public k::Memory {
 public:
  std::string device() const override { return "fake:0"; }
  bool host_visible() const override { return false; }
  k::DeviceArray allocate(std::int64_t n) override {
    auto* p = static_cast<float*>(std::calloc(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)), sizeof(float)));
    return k::DeviceArray(this, p, n);
  }
  void upload(float* d, const float* s, std::int64_t n) override {
    uploaded += n;
    std::copy(s, s + n, d);
  }
  void download(float* d, const float* s, std::int64_t n) override {
    downloaded += n;
    std::copy(s, s + n, d);
  }
  void copy(float* d, const float* s, std::int64_t n) override { std::copy(s, s + n, d); }
  double sum_squares(const float* x, std::int64_t n) override { return optim::sum_squares(x, n); }
  void add(float* y, const float* x, std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
  }
  void scale(float* y, float a, std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i) y[i] *= a;
  }
  bool any_nonfinite(const float*, std::int64_t) override { return false; }
  void* native_stream() override { return &g_stream_token; }
  std::shared_ptr<float[]> allocate_staging(std::int64_t n) override {
    ++staging_allocations;
    return k::Memory::allocate_staging(n);
  }
  std::int64_t uploaded = 0, downloaded = 0;
  int staging_allocations = 0;

 protected:
  void release(float* p) noexcept override { std::free(p); }
};

// Two ranks with equal gradients: every sum doubles. Records each call.
class RecordingComm final : public comm::Communicator {
 public:
  explicit RecordingComm(bool device) : device_(device) {}
  std::string_view name() const override { return device_ ? "fake-nccl" : "fake-mpi"; }
  int rank() const override { return 0; }
  int size() const override { return 2; }
  Status allreduce_sum(std::span<float> d) override { return start_allreduce_sum(d); }
  Status allreduce_sum(std::span<double> d) override {
    for (double& x : d) x *= 2;
    return {};
  }
  Status broadcast(std::span<float>, int) override { return {}; }
  Status broadcast(std::span<double>, int) override { return {}; }
  Status barrier() override { return {}; }
  Status start_allreduce_sum(std::span<float> d) override {
    calls.push_back("host");
    spans.push_back(d.data());
    for (float& x : d) x *= 2;
    return {};
  }
  Status wait_all() override {
    calls.push_back("wait_all");
    return {};
  }
  bool reduces_device_buffers() const override { return device_; }
  Status start_device_allreduce_sum(std::span<float> d, void* stream) override {
    if (fail_next) return fail("peer died", "comm");
    calls.push_back("device");
    spans.push_back(d.data());
    streams.push_back(stream);
    for (float& x : d) x *= 2;
    return {};
  }
  Status device_wait_all(void* stream) override {
    calls.push_back("device_wait");
    streams.push_back(stream);
    return {};
  }
  std::vector<std::string> calls;
  std::vector<const float*> spans;
  std::vector<void*> streams;
  bool fail_next = false;

 private:
  bool device_;
};

// Four tensors; 0.25 MiB buckets: {d, c} and {b, a} (as comm_test.cpp's plan).
void declare(models::ParameterSet& ps) {
  ps.add("a", 256, 256, false);
  ps.add("b", 1, 256, true);
  ps.add("c", 256, 256, false);
  ps.add("d", 1, 10, true);
}

void fill(const models::ParameterSet& ps, float v) {
  for (std::int64_t i = 0; i < ps.arena_size(); ++i) ps.grads()[i] = v;
}

}  // namespace

TEST_CASE("grad sync, device path: buckets summed in place as backward finishes them, nothing staged",
          "[comm][buckets][device]") {
  CountingDeviceMemory mem;
  models::ParameterSet ps;
  declare(ps);
  ps.finalize(mem);
  mem.uploaded = mem.downloaded = 0;  // what finalize moved is not the sync's
  RecordingComm c(true);
  GradSync sync(c, ps, 0.25);
  REQUIRE(sync.path() == GradSync::Path::device);
  CHECK(std::string(GradSync::path_name(sync.path())) == "device");
  REQUIRE(sync.buckets() == 2);
  CHECK(mem.staging_allocations == 0);
  for (int step = 0; step < 2; ++step) {  // the same order every step
    fill(ps, 0.5f);
    c.calls.clear();
    c.spans.clear();
    c.streams.clear();
    sync.begin(false);
    const std::size_t d[] = {3};
    sync.ready(d);
    CHECK(c.calls.empty());  // bucket 0 = {d, c}: c not final yet
    const std::size_t cc[] = {2};
    sync.ready(cc);
    REQUIRE(c.calls == std::vector<std::string>{"device"});  // started at once, during backward
    const std::size_t b[] = {1}, a[] = {0};
    sync.ready(b);
    sync.ready(a);
    REQUIRE(c.calls == std::vector<std::string>{"device", "device"});
    auto waited = sync.finish();
    REQUIRE(waited);
    // One device wait, never a host wait: the host does not block on the sums.
    CHECK(c.calls == std::vector<std::string>{"device", "device", "device_wait"});
    CHECK(sync.launched() == std::vector<std::size_t>{0, 1});
    // In place: the arena's own spans, last tensors first; every call on the backend's stream.
    REQUIRE(c.spans.size() == 2);
    CHECK(c.spans[0] == ps.grads() + sync.plan().buckets[0].offset);
    CHECK(c.spans[1] == ps.grads() + sync.plan().buckets[1].offset);
    CHECK(sync.plan().buckets[0].offset > sync.plan().buckets[1].offset);
    for (void* s : c.streams) CHECK(s == &g_stream_token);
  }
  for (std::int64_t i = 0; i < ps.arena_size(); i += 1000) CHECK(ps.grads()[i] == 1.0f);
  CHECK(mem.downloaded == 0);
  CHECK(mem.uploaded == 0);
  CHECK(sync.staged_bytes() == 0);
  CHECK(c.host_staged_bytes() == 0);
}

TEST_CASE("grad sync, device path: buckets never reported start at finish, in bucket order; measured norms",
          "[comm][buckets][device]") {
  CountingDeviceMemory mem;
  models::ParameterSet ps;
  declare(ps);
  ps.finalize(mem);
  mem.uploaded = mem.downloaded = 0;  // what finalize moved is not the sync's
  RecordingComm c(true);
  GradSync sync(c, ps, 0.25);
  fill(ps, 0.5f);
  sync.begin(true);
  const std::size_t b[] = {1, 0};  // the second bucket first (a model reporting out of order)
  sync.ready(b);
  auto waited = sync.finish();
  REQUIRE(waited);
  CHECK(sync.launched() == std::vector<std::size_t>{1, 0});
  CHECK(c.calls == std::vector<std::string>{"device", "device", "device_wait"});
  CHECK(sync.local_norm_sq() == Approx(0.25 * static_cast<double>(ps.arena_size())));
  CHECK(mem.downloaded == 0);
}

TEST_CASE("grad sync, device path: a failed start is the step's error", "[comm][buckets][device]") {
  CountingDeviceMemory mem;
  models::ParameterSet ps;
  declare(ps);
  ps.finalize(mem);
  mem.uploaded = mem.downloaded = 0;  // what finalize moved is not the sync's
  RecordingComm c(true);
  GradSync sync(c, ps, 0.25);
  sync.begin(false);
  c.fail_next = true;
  const std::size_t all[] = {3, 2, 1, 0};
  sync.ready(all);
  auto waited = sync.finish();
  REQUIRE_FALSE(waited);
  CHECK(waited.error().what == "peer died");
}

TEST_CASE("grad sync, staged path: device arenas with a host-only communicator go through pinned staging",
          "[comm][buckets][device]") {
  CountingDeviceMemory mem;
  models::ParameterSet ps;
  declare(ps);
  ps.finalize(mem);
  mem.uploaded = mem.downloaded = 0;  // what finalize moved is not the sync's
  RecordingComm c(false);  // comm: mpi
  GradSync sync(c, ps, 0.25);
  REQUIRE(sync.path() == GradSync::Path::staged);
  CHECK(mem.staging_allocations == 1);  // once, not per step
  fill(ps, 0.5f);
  sync.begin(false);
  const std::size_t all[] = {3, 2, 1, 0};
  sync.ready(all);
  REQUIRE(sync.finish());
  CHECK(c.calls == std::vector<std::string>{"host", "host", "wait_all"});
  for (const float* p : c.spans) CHECK((p < ps.grads() || p >= ps.grads() + ps.arena_size()));  // not the arena
  CHECK(mem.downloaded == ps.arena_size());
  CHECK(mem.uploaded == ps.arena_size());
  CHECK(sync.staged_bytes() == static_cast<std::uint64_t>(2 * ps.arena_size()) * sizeof(float));
  for (std::int64_t i = 0; i < ps.arena_size(); i += 1000) CHECK(ps.grads()[i] == 1.0f);
  CHECK(mem.staging_allocations == 1);
}

TEST_CASE("grad sync, host path: host arenas are reduced where they lie", "[comm][buckets]") {
  models::ParameterSet ps;
  declare(ps);
  ps.finalize();
  RecordingComm c(true);  // even a device-capable communicator gets host spans for host arenas
  GradSync sync(c, ps, 0.25);
  REQUIRE(sync.path() == GradSync::Path::host);
  fill(ps, 0.5f);
  sync.begin(false);
  const std::size_t all[] = {3, 2, 1, 0};
  sync.ready(all);
  REQUIRE(sync.finish());
  CHECK(c.calls == std::vector<std::string>{"host", "host", "wait_all"});
  CHECK(c.spans[0] == ps.grads() + sync.plan().buckets[0].offset);
  CHECK(sync.staged_bytes() == 0);
}

TEST_CASE("communicators: the host-only default refuses device sums", "[comm][device]") {
  struct HostOnly final : comm::Communicator {
    std::string_view name() const override { return "host-only"; }
    int rank() const override { return 0; }
    int size() const override { return 1; }
    Status allreduce_sum(std::span<float>) override { return {}; }
    Status allreduce_sum(std::span<double>) override { return {}; }
    Status broadcast(std::span<float>, int) override { return {}; }
    Status broadcast(std::span<double>, int) override { return {}; }
    Status barrier() override { return {}; }
    Status start_allreduce_sum(std::span<float>) override { return {}; }
    Status wait_all() override { return {}; }
  } h;
  CHECK_FALSE(h.reduces_device_buffers());
  float x[2] = {1, 2};
  auto s = h.start_device_allreduce_sum(std::span<float>(x), nullptr);
  REQUIRE_FALSE(s);
  CHECK(s.error().what.find("host-only") != std::string::npos);
  CHECK(h.device_wait_all(nullptr));
  CHECK(h.host_staged_bytes() == 0);
}

TEST_CASE("host memory: no stream of its own, staging is zeroed host floats", "[comm][device]") {
  k::Memory& host = k::host_memory();
  CHECK(host.native_stream() == nullptr);
  auto staging = host.allocate_staging(1000);
  REQUIRE(staging);
  for (int i = 0; i < 1000; ++i) CHECK(staging[i] == 0.0f);
  staging[999] = 1.0f;  // writable to its end
}
