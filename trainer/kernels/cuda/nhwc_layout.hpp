// nhwc_layout.hpp — the pure index arithmetic of the GPU's channel-last (NHWC) nets, shared by
// the kernels (mixed_kernels.cu), the net (cuda_nhwc_net.cpp) and the CPU unit tests
// (tests/trainer/kernels/cuda/nhwc_layout_test.cpp). Plain C++17, header-only, no CUDA.
//
//   NCHW row of a sample: index ch·hw + p   (p = y·w + x, the layout the trainer's data and
//                                            parameters use)
//   NHWC row of a sample: index p·c + ch    (what cuDNN's tensor-core convolutions read fastest)
//   filters: KCRS [k][c][r][s] (the parameter arena) <-> KRSC [k][r][s][c] (cuDNN's NHWC filter);
//            the same transform with n = k, hw = r·s.
//   a dense layer after a spatial tensor: its weight rows are NCHW feature indices; the net
//            keeps a copy whose rows are in NHWC order (row_to_nhwc), so the flattened NHWC
//            activations multiply it directly.
#pragma once

#include <cstdint>

namespace dlsweep::trainer::kernels::cuda {

/// NCHW index ch·hw + p -> NHWC index p·c + ch of the same element within one sample.
inline std::int64_t nchw_to_nhwc_index(std::int64_t i, std::int64_t c, std::int64_t hw) {
  const std::int64_t ch = i / hw, p = i % hw;
  return p * c + ch;
}
/// The inverse: NHWC index p·c + ch -> NCHW index ch·hw + p.
inline std::int64_t nhwc_to_nchw_index(std::int64_t j, std::int64_t c, std::int64_t hw) {
  const std::int64_t p = j / c, ch = j % c;
  return ch * hw + p;
}

/// Blocks of a deterministic per-channel reduction over `rows` rows: a function of rows alone
/// (never of the device), so that the summation order, and with it every rounding, is the
/// same on every GPU. Each block sums rows_per_block(rows) consecutive rows.
inline std::int64_t reduce_blocks(std::int64_t rows) {
  constexpr std::int64_t kRowsPerBlockMin = 64, kMaxBlocks = 1024;
  std::int64_t b = (rows + kRowsPerBlockMin - 1) / kRowsPerBlockMin;
  if (b < 1) b = 1;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return b;
}
inline std::int64_t rows_per_block(std::int64_t rows) {
  const std::int64_t b = reduce_blocks(rows);
  return (rows + b - 1) / b;
}

/// Threads of a reduction block that share one channel tile of width `tile` (≤ 256): the
/// rows a block covers are split among 256 / tile row phases.
inline std::int64_t reduce_tile(std::int64_t c) { return c < 256 ? c : 256; }
inline std::int64_t reduce_phases(std::int64_t tile) { return 256 / tile; }

}  // namespace dlsweep::trainer::kernels::cuda
