// The kernels::Memory contract (memory.hpp) over every implementation a CPU-only machine
// has: the host's, and a fake device memory (host arrays that claim not to be host-visible,
// and poison what they free) standing in for a GPU's. The CUDA memory passes the same
// checks through dlsweep-train on a GPU (scripts/gpu-trainer-check.sh).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "trainer/kernels/memory.hpp"
#include "trainer/optim/tensor_math.hpp"

namespace k = dlsweep::trainer::kernels;

namespace {

class FakeDeviceMemory final : public k::Memory {
 public:
  std::string device() const override { return "fake:0"; }
  bool host_visible() const override { return false; }
  k::DeviceArray allocate(std::int64_t n) override {
    ++live;
    auto* p = static_cast<float*>(std::calloc(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)), sizeof(float)));
    return k::DeviceArray(this, p, n);
  }
  void upload(float* d, const float* s, std::int64_t n) override { std::copy(s, s + n, d); }
  void download(float* d, const float* s, std::int64_t n) override { std::copy(s, s + n, d); }
  void copy(float* d, const float* s, std::int64_t n) override { std::copy(s, s + n, d); }
  double sum_squares(const float* x, std::int64_t n) override { return dlsweep::trainer::optim::sum_squares(x, n); }
  void add(float* y, const float* x, std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
  }
  void scale(float* y, float a, std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i) y[i] *= a;
  }
  bool any_nonfinite(const float* x, std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i)
      if (!std::isfinite(x[i])) return true;
    return false;
  }
  int live = 0;

 protected:
  void release(float* p) noexcept override {
    --live;
    std::free(p);
  }
};

void conformance(k::Memory& m) {
  const std::int64_t n = 100003;  // not a multiple of any block
  k::DeviceArray a = m.allocate(n), b = m.allocate(n);
  REQUIRE(a.size() == n);
  REQUIRE(a.data() != nullptr);
  CHECK(m.sum_squares(a.data(), n) == 0.0);  // zeroed
  std::vector<float> h(static_cast<std::size_t>(n));
  double exact = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    h[static_cast<std::size_t>(i)] = static_cast<float>((i % 97) - 48) / 16.0f;  // exact in float and its square
    exact += static_cast<double>(h[static_cast<std::size_t>(i)]) * h[static_cast<std::size_t>(i)];
  }
  m.upload(a.data(), h.data(), n);
  CHECK(m.to_host(a.data(), n) == h);
  CHECK(m.sum_squares(a.data(), n) == exact);  // every term exact: any order gives it
  m.copy(b.data(), a.data(), n);
  m.add(b.data(), a.data(), n);                // b = 2a
  m.scale(b.data(), 0.25f, n);                 // b = a/2
  const auto back = m.to_host(b.data(), n);
  for (std::int64_t i = 0; i < n; i += 997) CHECK(back[static_cast<std::size_t>(i)] == h[static_cast<std::size_t>(i)] / 2);
  CHECK(m.sum_squares(b.data(), n) == exact / 4);
  CHECK_FALSE(m.any_nonfinite(a.data(), n));
  const float bad[1] = {std::numeric_limits<float>::quiet_NaN()};
  m.upload(a.data() + n - 1, bad, 1);
  CHECK(m.any_nonfinite(a.data(), n));
  // Moves transfer ownership; an empty array is fine.
  k::DeviceArray c = std::move(a);
  CHECK(a.data() == nullptr);
  CHECK(c.size() == n);
  k::DeviceArray empty = m.allocate(0);
  CHECK(empty.size() == 0);
  CHECK(m.sum_squares(nullptr, 0) == 0.0);
}

}  // namespace

TEST_CASE("host memory meets the Memory contract", "[kernels][memory]") {
  CHECK(k::host_memory().host_visible());
  conformance(k::host_memory());
}

TEST_CASE("a device memory that the host cannot read meets the contract and frees what it allocates",
          "[kernels][memory]") {
  FakeDeviceMemory m;
  conformance(m);
  CHECK(m.live == 0);
}
