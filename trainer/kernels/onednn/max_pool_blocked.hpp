// max_pool_blocked.hpp — 2x2 stride-2 max pooling (no padding) on the channel-blocked layouts
// oneDNN's convolutions produce: nChw8c on AVX2, nChw16c on AVX-512/AMX — [n][c/L][h][w][L
// channels], float, L = 8 or 16. Used by the oneDNN backend instead of oneDNN 2.6's pooling
// primitive, which it runs at a quarter of memory bandwidth (measured at batch 256, 32x28x28,
// 2 threads, nChw8c: 24/17 ms forward/backward vs 7.6/8.0 ms here; 1 thread 18/14 vs 3.5/4.6
// ms). Any other layout falls back to oneDNN's pooling (onednn_net_layers.cpp).
//
// Semantics = the reference max_pool_forward/backward: each output takes the FIRST maximum of
// its window in (row, column) order (NaN never replaces a value), the workspace holds its
// position 0..3, backward sends dy there; an odd last row/column belongs to no window and
// gets gradient 0. Padding channels (c not a multiple of L) are pooled like the others (zeros).
#pragma once

#include <cstdint>

namespace dlsweep::trainer::kernels {

/// Channel-block widths the blocked pooling handles (oneDNN's nChw8c and nChw16c).
constexpr bool max_pool_blocked_supports(std::int64_t lanes) { return lanes == 8 || lanes == 16; }

/// x: [n][cblocks][h][w][lanes]; y: [n][cblocks][h/2][w/2][lanes]; ws: one byte per y
/// element. `lanes` must satisfy max_pool_blocked_supports (else std::invalid_argument).
void max_pool2x2_blocked_forward(std::int64_t lanes, const float* x, std::int64_t n, std::int64_t cblocks,
                                 std::int64_t h, std::int64_t w, float* y, std::uint8_t* ws);

/// dx (OVERWRITTEN, [n][cblocks][h][w][lanes]) from dy ([n][cblocks][h/2][w/2][lanes]) and ws.
/// When `relu_of` (the pooled output y) is given, the pooled input was a ReLU's output and its
/// derivative is applied too: an output's gradient passes only where y > 0.
void max_pool2x2_blocked_backward(std::int64_t lanes, const float* dy, const std::uint8_t* ws, const float* relu_of,
                                  std::int64_t n, std::int64_t cblocks, std::int64_t h, std::int64_t w, float* dx);

}  // namespace dlsweep::trainer::kernels
