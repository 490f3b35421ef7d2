// The blocked 2x2 max pooling on both channel-block widths oneDNN picks (8 on AVX2, 16 on
// AVX-512/AMX), checked against a plain NCHW computation on every machine, whatever layout
// this CPU's convolutions would choose: the net-level test sees only one of them per ISA.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "trainer/kernels/onednn/max_pool_blocked.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;
using namespace dlsweep::trainer::kernels;

namespace {
// Index of (n, c, y, x) in [n][c/L][h][w][L].
std::int64_t at(std::int64_t L, std::int64_t cb, std::int64_t h, std::int64_t w, std::int64_t n, std::int64_t c,
                std::int64_t y, std::int64_t x) {
  return (((n * cb + c / L) * h + y) * w + x) * L + c % L;
}
}  // namespace

TEST_CASE("blocked 2x2 max pooling matches plain pooling for 8- and 16-channel blocks", "[kernels][pool]") {
  for (std::int64_t L : {8, 16}) {
    for (std::int64_t side : {6, 7}) {
      INFO("lanes " << L << ", side " << side);
      const std::int64_t n = 2, c = 20, cb = (c + L - 1) / L, h = side, w = side, oh = h / 2, ow = w / 2;
      std::vector<float> x(static_cast<std::size_t>(n * cb * h * w * L), 0.0f);
      SplitMix64 rng(static_cast<std::uint64_t>(L * 100 + side));
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t ch = 0; ch < c; ++ch)
          for (std::int64_t yy = 0; yy < h; ++yy)
            for (std::int64_t xx = 0; xx < w; ++xx)
              // Coarse values so ties happen: the FIRST maximum in (row, column) order wins.
              x[static_cast<std::size_t>(at(L, cb, h, w, i, ch, yy, xx))] =
                  static_cast<float>(static_cast<int>(rng.uniform() * 5) - 2);
      std::vector<float> y(static_cast<std::size_t>(n * cb * oh * ow * L)), relu_y;
      std::vector<std::uint8_t> ws(y.size());
      max_pool2x2_blocked_forward(L, x.data(), n, cb, h, w, y.data(), ws.data());
      std::vector<float> dy(y.size()), dx(x.size(), 42.0f);
      for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(i % 13) + 1.0f;
      max_pool2x2_blocked_backward(L, dy.data(), ws.data(), y.data(), n, cb, h, w, dx.data());
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t ch = 0; ch < c; ++ch) {
          for (std::int64_t r = 0; r < oh; ++r)
            for (std::int64_t q = 0; q < ow; ++q) {
              float m = x[static_cast<std::size_t>(at(L, cb, h, w, i, ch, 2 * r, 2 * q))];
              std::int64_t my = 2 * r, mx = 2 * q;
              for (auto [dyy, dxx] : {std::pair{0, 1}, {1, 0}, {1, 1}}) {
                const float v = x[static_cast<std::size_t>(at(L, cb, h, w, i, ch, 2 * r + dyy, 2 * q + dxx))];
                if (v > m) m = v, my = 2 * r + dyy, mx = 2 * q + dxx;
              }
              const std::size_t o = static_cast<std::size_t>(at(L, cb, oh, ow, i, ch, r, q));
              REQUIRE(y[o] == m);
              for (std::int64_t yy = 2 * r; yy < 2 * r + 2; ++yy)
                for (std::int64_t xx = 2 * q; xx < 2 * q + 2; ++xx) {
                  const float want = (yy == my && xx == mx && m > 0) ? dy[o] : 0.0f;  // ReLU mask: y > 0
                  REQUIRE(dx[static_cast<std::size_t>(at(L, cb, h, w, i, ch, yy, xx))] == want);
                }
            }
          for (std::int64_t yy = 0; yy < h; ++yy)  // an odd last row/column is in no window
            for (std::int64_t xx = 0; xx < w; ++xx)
              if (yy >= 2 * oh || xx >= 2 * ow) REQUIRE(dx[static_cast<std::size_t>(at(L, cb, h, w, i, ch, yy, xx))] == 0.0f);
        }
    }
  }
  std::vector<float> buf(64);
  std::vector<std::uint8_t> ws(64);
  CHECK_THROWS_AS(max_pool2x2_blocked_forward(4, buf.data(), 1, 1, 2, 2, buf.data(), ws.data()), std::invalid_argument);
}
