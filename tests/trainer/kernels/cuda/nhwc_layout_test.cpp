// The GPU's channel-last index arithmetic (trainer/kernels/cuda/nhwc_layout.hpp), on the CPU:
// the NCHW <-> NHWC maps are inverse bijections, the dense row permutation is the one that
// makes a flattened NHWC activation times the permuted weights equal the NCHW product, and the
// reduction plan depends on the row count alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
#include <vector>

#include "trainer/kernels/cuda/nhwc_layout.hpp"

using namespace dlsweep::trainer::kernels::cuda;

TEST_CASE("nhwc layout: NCHW and NHWC indices are inverse bijections", "[gpu][nhwc]") {
  for (std::int64_t c : {1, 3, 16, 64})
    for (std::int64_t hw : {1, 4, 49, 1024}) {
      std::set<std::int64_t> seen;
      for (std::int64_t i = 0; i < c * hw; ++i) {
        const std::int64_t j = nchw_to_nhwc_index(i, c, hw);
        REQUIRE(j >= 0);
        REQUIRE(j < c * hw);
        seen.insert(j);
        REQUIRE(nhwc_to_nchw_index(j, c, hw) == i);
      }
      CHECK(static_cast<std::int64_t>(seen.size()) == c * hw);
    }
  // Known values: c = 2, hw = 3: NCHW [c0p0 c0p1 c0p2 c1p0 c1p1 c1p2] -> NHWC [c0p0 c1p0 c0p1 ...].
  CHECK(nchw_to_nhwc_index(0, 2, 3) == 0);
  CHECK(nchw_to_nhwc_index(1, 2, 3) == 2);
  CHECK(nchw_to_nhwc_index(3, 2, 3) == 1);
  CHECK(nchw_to_nhwc_index(5, 2, 3) == 5);
}

TEST_CASE("nhwc layout: a dense layer after a spatial tensor, weights permuted to NHWC rows", "[gpu][nhwc]") {
  // y = x_nchw · W  must equal  x_nhwc · W'  with W'[nhwc(i)] = W[i] (what rows_to_nhwc writes).
  const std::int64_t c = 3, hw = 5, in = c * hw, out = 4;
  std::vector<double> x(in), w(in * out), wp(in * out), xh(in);
  for (std::int64_t i = 0; i < in; ++i) x[i] = 0.5 + i * 0.25;
  for (std::int64_t i = 0; i < in * out; ++i) w[i] = (i % 7) - 3.0;
  for (std::int64_t i = 0; i < in; ++i) {
    const std::int64_t j = nchw_to_nhwc_index(i, c, hw);
    xh[j] = x[i];
    for (std::int64_t o = 0; o < out; ++o) wp[j * out + o] = w[i * out + o];
  }
  for (std::int64_t o = 0; o < out; ++o) {
    double a = 0, b = 0;
    for (std::int64_t i = 0; i < in; ++i) a += x[i] * w[i * out + o], b += xh[i] * wp[i * out + o];
    CHECK(a == b);
  }
}

TEST_CASE("nhwc layout: the reduction plan covers every row once and depends on the rows alone", "[gpu][nhwc]") {
  for (std::int64_t rows : {1, 63, 64, 65, 1000, 4096, 65536, 4194304, 67108864}) {
    const std::int64_t b = reduce_blocks(rows), rpb = rows_per_block(rows);
    INFO("rows " << rows);
    CHECK(b >= 1);
    CHECK(b <= 1024);
    CHECK(b * rpb >= rows);        // every row in some block
    CHECK((b - 1) * rpb < rows);   // no block empty
  }
  for (std::int64_t c : {1, 10, 16, 255, 256, 512}) {
    const std::int64_t t = reduce_tile(c);
    CHECK(t >= 1);
    CHECK(t <= 256);
    CHECK(reduce_phases(t) * t <= 256);
    CHECK(reduce_phases(t) >= 1);
  }
}

TEST_CASE("nhwc layout: which GPU net runs a graph", "[gpu][nhwc]") {
  // bf16/fp16: the NHWC net always; fp32: the NCHW net always (even when forced).
  CHECK(choose_cuda_net(true, false, false, 64, nullptr) == CudaNetKind::nhwc);
  CHECK(choose_cuda_net(true, false, true, 4096, "nchw") == CudaNetKind::nhwc);
  CHECK(choose_cuda_net(false, false, true, 4096, "nhwc") == CudaNetKind::nchw);
  // tf32: convolutions at batch >= 256 on NHWC, dense-only graphs and small batches on NCHW.
  CHECK(choose_cuda_net(false, true, true, 256, nullptr) == CudaNetKind::nhwc);
  CHECK(choose_cuda_net(false, true, true, 255, nullptr) == CudaNetKind::nchw);
  CHECK(choose_cuda_net(false, true, false, 16384, nullptr) == CudaNetKind::nchw);
  // DLSWEEP_CUDA_NET forces tf32's; other values are ignored.
  CHECK(choose_cuda_net(false, true, false, 64, "nhwc") == CudaNetKind::nhwc);
  CHECK(choose_cuda_net(false, true, true, 4096, "nchw") == CudaNetKind::nchw);
  CHECK(choose_cuda_net(false, true, true, 4096, "bogus") == CudaNetKind::nhwc);
}

TEST_CASE("nhwc layout: a dense layer's weights are permuted only after a multi-channel spatial tensor",
          "[gpu][nhwc]") {
  CHECK(dense_input_needs_permutation(64, 49));
  CHECK_FALSE(dense_input_needs_permutation(1, 784));  // the MLP on 1x28x28 images
  CHECK_FALSE(dense_input_needs_permutation(512, 1));  // after a dense layer or global pooling
}

TEST_CASE("nhwc layout: max pooling's backward runs per window only where the windows tile the input",
          "[gpu][nhwc]") {
  // Where the predicate holds, the tiled kernel's writes (each window's k² inputs) cover every
  // input exactly once; where some input is in no window or in two, it does not hold.
  struct G { std::int64_t k, s, p, h, w; };
  for (G g : {G{2, 2, 0, 28, 28}, G{2, 2, 0, 14, 14}, G{2, 2, 0, 7, 7}, G{3, 2, 0, 9, 9}, G{2, 2, 1, 6, 6},
              G{3, 3, 0, 9, 6}, G{1, 1, 0, 5, 3}}) {
    const std::int64_t oh = (g.h + 2 * g.p - g.k) / g.s + 1, ow = (g.w + 2 * g.p - g.k) / g.s + 1;
    std::vector<int> hits(static_cast<std::size_t>(g.h * g.w), 0);
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t ky = 0; ky < g.k; ++ky)
          for (std::int64_t kx = 0; kx < g.k; ++kx) {
            const std::int64_t iy = oy * g.s - g.p + ky, ix = ox * g.s - g.p + kx;
            if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ++hits[static_cast<std::size_t>(iy * g.w + ix)];
          }
    const bool once = std::all_of(hits.begin(), hits.end(), [](int n) { return n == 1; });
    const bool padded = g.p > 0;  // a padded window's out-of-range cells are written by no one
    INFO("k " << g.k << " s " << g.s << " p " << g.p << " h " << g.h << " w " << g.w);
    CHECK(pool_windows_tile(g.k, g.s, g.p, g.h, g.w, oh, ow) == (once && !padded));
  }
  CHECK(pool_windows_tile(2, 2, 0, 28, 28, 14, 14));
  CHECK_FALSE(pool_windows_tile(2, 2, 0, 7, 7, 3, 3));  // the last row and column are in no window
}

TEST_CASE("nhwc layout: pooling indexes with int32 while every index fits", "[gpu][nhwc]") {
  CHECK(pool_fits_int32(4096, 32, 28, 28, 14, 14));     // the CNN's first pool at batch 4096: 103M
  CHECK(pool_fits_int32(32768, 32, 32, 32, 16, 16));        // 2^30 inputs
  CHECK_FALSE(pool_fits_int32(65536, 32, 32, 32, 16, 16));  // 2^31 inputs: one past int32's largest
  CHECK_FALSE(pool_fits_int32(1, 1, 1LL << 31, 1, 1, 1));
  CHECK_FALSE(pool_fits_int32(1LL << 40, 1LL << 40, 1, 1, 1, 1));  // the products overflow int64 unchecked
}
