#include "trainer/kernels/onednn/max_pool_blocked.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dlsweep::trainer::kernels {

namespace {

// The L-lane inner loops vectorise (compare + blend); the clones pick AVX-512 or AVX2 at load
// time, so the same binary runs at full width on every CPU it meets. One OpenMP region per
// call over (image·channel block, output row).
template <std::int64_t L>
__attribute__((target_clones("avx512f", "avx2", "default"))) void forward_impl(const float* x, std::int64_t n,
                                                                               std::int64_t cblocks, std::int64_t h,
                                                                               std::int64_t w, float* y,
                                                                               std::uint8_t* ws) {
  const std::int64_t oh = h / 2, ow = w / 2, planes = n * cblocks;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t b = 0; b < planes; ++b)
    for (std::int64_t r = 0; r < oh; ++r) {
      const float* top = x + (b * h + 2 * r) * w * L;
      const float* bottom = top + w * L;
      float* out = y + (b * oh + r) * ow * L;
      std::uint8_t* pos = ws + (b * oh + r) * ow * L;
      for (std::int64_t c = 0; c < ow; ++c) {
        const float* p = top + 2 * c * L;
        const float* q = bottom + 2 * c * L;
        for (std::int64_t l = 0; l < L; ++l) {
          float m = p[l];
          std::uint8_t k = 0;
          if (p[L + l] > m) {
            m = p[L + l];
            k = 1;
          }
          if (q[l] > m) {
            m = q[l];
            k = 2;
          }
          if (q[L + l] > m) {
            m = q[L + l];
            k = 3;
          }
          out[c * L + l] = m;
          pos[c * L + l] = k;
        }
      }
    }
}

template <std::int64_t L>
__attribute__((target_clones("avx512f", "avx2", "default"))) void backward_impl(
    const float* dy, const std::uint8_t* ws, const float* relu_of, std::int64_t n, std::int64_t cblocks,
    std::int64_t h, std::int64_t w, float* dx) {
  const std::int64_t oh = h / 2, ow = w / 2, planes = n * cblocks;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t b = 0; b < planes; ++b)
    for (std::int64_t r = 0; r < oh; ++r) {
      float* top = dx + (b * h + 2 * r) * w * L;
      float* bottom = top + w * L;
      const float* g = dy + (b * oh + r) * ow * L;
      const float* yv = relu_of ? relu_of + (b * oh + r) * ow * L : nullptr;
      const std::uint8_t* pos = ws + (b * oh + r) * ow * L;
      for (std::int64_t c = 0; c < ow; ++c)
        for (std::int64_t l = 0; l < L; ++l) {
          const float v = (!yv || yv[c * L + l] > 0) ? g[c * L + l] : 0.0f;
          const std::uint8_t k = pos[c * L + l];
          top[2 * c * L + l] = k == 0 ? v : 0.0f;
          top[(2 * c + 1) * L + l] = k == 1 ? v : 0.0f;
          bottom[2 * c * L + l] = k == 2 ? v : 0.0f;
          bottom[(2 * c + 1) * L + l] = k == 3 ? v : 0.0f;
        }
      if (w % 2) {  // the last column of both rows is in no window
        std::fill(top + (w - 1) * L, top + w * L, 0.0f);
        std::fill(bottom + (w - 1) * L, bottom + w * L, 0.0f);
      }
    }
  if (h % 2)  // the last row is in no window
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < planes; ++b)
      std::fill(dx + (b * h + h - 1) * w * L, dx + (b * h + h) * w * L, 0.0f);
}

void check_lanes(std::int64_t lanes) {
  if (!max_pool_blocked_supports(lanes))
    throw std::invalid_argument("max_pool2x2_blocked: channel block of " + std::to_string(lanes) +
                                " lanes (only 8 and 16 are handled)");
}

}  // namespace

void max_pool2x2_blocked_forward(std::int64_t lanes, const float* x, std::int64_t n, std::int64_t cblocks,
                                 std::int64_t h, std::int64_t w, float* y, std::uint8_t* ws) {
  check_lanes(lanes);
  if (lanes == 8)
    forward_impl<8>(x, n, cblocks, h, w, y, ws);
  else
    forward_impl<16>(x, n, cblocks, h, w, y, ws);
}

void max_pool2x2_blocked_backward(std::int64_t lanes, const float* dy, const std::uint8_t* ws, const float* relu_of,
                                  std::int64_t n, std::int64_t cblocks, std::int64_t h, std::int64_t w, float* dx) {
  check_lanes(lanes);
  if (lanes == 8)
    backward_impl<8>(dy, ws, relu_of, n, cblocks, h, w, dx);
  else
    backward_impl<16>(dy, ws, relu_of, n, cblocks, h, w, dx);
}

}  // namespace dlsweep::trainer::kernels
