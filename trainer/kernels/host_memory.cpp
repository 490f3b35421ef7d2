// host_memory.cpp — kernels::Memory on the host: the CPU backends' arrays.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>

#include "trainer/kernels/matrix.hpp"
#include "trainer/kernels/memory.hpp"
#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer::kernels {

namespace {

class HostMemory final : public Memory {
 public:
  std::string device() const override { return "cpu"; }
  bool host_visible() const override { return true; }
  DeviceArray allocate(std::int64_t n) override {
    if (n <= 0) return DeviceArray(this, nullptr, 0);
    std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    // As AlignedBuffer: large arrays on 2 MiB pages (the optimizer streams through them).
    const std::size_t align = bytes >= kHugePageMin ? kHugePage : kBufferAlignment;
    bytes = (bytes + align - 1) / align * align;
    auto* p = static_cast<float*>(std::aligned_alloc(align, bytes));
    if (!p) throw std::bad_alloc();
    if (align == kHugePage) ::madvise(p, bytes, MADV_HUGEPAGE);
    std::memset(p, 0, bytes);
    return DeviceArray(this, p, n);
  }
  void upload(float* dst, const float* src, std::int64_t n) override { copy(dst, src, n); }
  void download(float* dst, const float* src, std::int64_t n) override { copy(dst, src, n); }
  void copy(float* dst, const float* src, std::int64_t n) override {
    if (n > 0 && dst != src) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
  }
  double sum_squares(const float* x, std::int64_t n) override { return optim::sum_squares(x, n); }
  void add(float* y, const float* x, std::int64_t n) override {
    optim::parallel_slices(n, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) y[i] += x[i];
    });
  }
  void scale(float* y, float a, std::int64_t n) override {
    optim::parallel_slices(n, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) y[i] *= a;
    });
  }
  bool any_nonfinite(const float* x, std::int64_t n) override {
    for (std::int64_t i = 0; i < n; ++i)
      if (!std::isfinite(x[i])) return true;
    return false;
  }

 protected:
  void release(float* p) noexcept override { std::free(p); }
};

}  // namespace

Memory& host_memory() {
  static HostMemory m;
  return m;
}

}  // namespace dlsweep::trainer::kernels
