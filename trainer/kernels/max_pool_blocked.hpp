// max_pool_blocked.hpp — 2x2 stride-2 max pooling (no padding) on the nChw8c layout oneDNN's
// AVX2 convolutions produce: [n][c/8][h][w][8 channels], float. Used by the oneDNN backend
// instead of oneDNN 2.6's pooling primitive for this one shape, which it runs at a quarter of
// memory bandwidth (measured at batch 256, 32x28x28, 2 threads: 24/17 ms forward/backward
// vs 7.6/8.0 ms here; 1 thread 18/14 vs 3.5/4.6 ms).
//
// Semantics = the reference max_pool_forward/backward: each output takes the FIRST maximum of
// its window in (row, column) order (NaN never replaces a value), the workspace holds its
// position 0..3, backward sends dy there; an odd last row/column belongs to no window and
// gets gradient 0. Padding channels (c not a multiple of 8) are pooled like the others (zeros).
#pragma once

#include <cstdint>

namespace dlsweep::trainer::kernels {

/// x: [n][cblocks][h][w][8]; y: [n][cblocks][h/2][w/2][8]; ws: one byte per y element.
void max_pool2x2_nchw8c_forward(const float* x, std::int64_t n, std::int64_t cblocks, std::int64_t h, std::int64_t w,
                                float* y, std::uint8_t* ws);

/// dx (OVERWRITTEN, [n][cblocks][h][w][8]) from dy ([n][cblocks][h/2][w/2][8]) and ws. When
/// `relu_of` (the pooled output y) is given, the pooled input was a ReLU's output and its
/// derivative is applied too: an output's gradient passes only where y > 0.
void max_pool2x2_nchw8c_backward(const float* dy, const std::uint8_t* ws, const float* relu_of, std::int64_t n,
                                 std::int64_t cblocks, std::int64_t h, std::int64_t w, float* dx);

}  // namespace dlsweep::trainer::kernels
