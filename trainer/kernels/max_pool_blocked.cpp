#include "trainer/kernels/max_pool_blocked.hpp"

#include <algorithm>

namespace dlsweep::trainer::kernels {

namespace {
constexpr std::int64_t kLanes = 8;
}

// The 8-lane inner loops vectorise (compare + blend); the clones pick AVX2 at load time.
// One OpenMP region per call over (image·channel block, output row).
__attribute__((target_clones("avx2", "default"))) void max_pool2x2_nchw8c_forward(
    const float* x, std::int64_t n, std::int64_t cblocks, std::int64_t h, std::int64_t w, float* y, std::uint8_t* ws) {
  const std::int64_t oh = h / 2, ow = w / 2, planes = n * cblocks;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t b = 0; b < planes; ++b)
    for (std::int64_t r = 0; r < oh; ++r) {
      const float* top = x + (b * h + 2 * r) * w * kLanes;
      const float* bottom = top + w * kLanes;
      float* out = y + (b * oh + r) * ow * kLanes;
      std::uint8_t* pos = ws + (b * oh + r) * ow * kLanes;
      for (std::int64_t c = 0; c < ow; ++c) {
        const float* p = top + 2 * c * kLanes;
        const float* q = bottom + 2 * c * kLanes;
        for (std::int64_t l = 0; l < kLanes; ++l) {
          float m = p[l];
          std::uint8_t k = 0;
          if (p[kLanes + l] > m) {
            m = p[kLanes + l];
            k = 1;
          }
          if (q[l] > m) {
            m = q[l];
            k = 2;
          }
          if (q[kLanes + l] > m) {
            m = q[kLanes + l];
            k = 3;
          }
          out[c * kLanes + l] = m;
          pos[c * kLanes + l] = k;
        }
      }
    }
}

__attribute__((target_clones("avx2", "default"))) void max_pool2x2_nchw8c_backward(
    const float* dy, const std::uint8_t* ws, const float* relu_of, std::int64_t n, std::int64_t cblocks,
    std::int64_t h, std::int64_t w, float* dx) {
  const std::int64_t oh = h / 2, ow = w / 2, planes = n * cblocks;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t b = 0; b < planes; ++b)
    for (std::int64_t r = 0; r < oh; ++r) {
      float* top = dx + (b * h + 2 * r) * w * kLanes;
      float* bottom = top + w * kLanes;
      const float* g = dy + (b * oh + r) * ow * kLanes;
      const float* yv = relu_of ? relu_of + (b * oh + r) * ow * kLanes : nullptr;
      const std::uint8_t* pos = ws + (b * oh + r) * ow * kLanes;
      for (std::int64_t c = 0; c < ow; ++c)
        for (std::int64_t l = 0; l < kLanes; ++l) {
          const float v = (!yv || yv[c * kLanes + l] > 0) ? g[c * kLanes + l] : 0.0f;
          const std::uint8_t k = pos[c * kLanes + l];
          top[2 * c * kLanes + l] = k == 0 ? v : 0.0f;
          top[(2 * c + 1) * kLanes + l] = k == 1 ? v : 0.0f;
          bottom[2 * c * kLanes + l] = k == 2 ? v : 0.0f;
          bottom[(2 * c + 1) * kLanes + l] = k == 3 ? v : 0.0f;
        }
      if (w % 2) {  // the last column of both rows is in no window
        std::fill(top + (w - 1) * kLanes, top + w * kLanes, 0.0f);
        std::fill(bottom + (w - 1) * kLanes, bottom + w * kLanes, 0.0f);
      }
    }
  if (h % 2)  // the last row is in no window
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < planes; ++b)
      std::fill(dx + (b * h + h - 1) * w * kLanes, dx + (b * h + h) * w * kLanes, 0.0f);
}

}  // namespace dlsweep::trainer::kernels
