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
#include <string_view>

namespace dlsweep::trainer::kernels::cuda {

/// Which GPU net runs a graph: the NCHW fp32 net (CudaNet: cuBLASLt with fused epilogues,
/// cuDNN NCHW) or the channel-last mixed-precision one (CudaNhwcNet). bf16 and fp16 run only on
/// the NHWC net; fp32 only on the NCHW one (its math matches the CPU reference). tf32 takes the
/// NHWC net where it is faster, as measured on an H200 (docs/gpu.md): graphs with convolutions
/// at batch >= 256 (ResNet-20 2.0-2.7x, the CNN 1.1-1.2x at 1024-4096); dense-only graphs and
/// small batches stay on the NCHW net (fewer, fused kernels: the MLP 1.5-1.7x). `force`: the
/// DLSWEEP_CUDA_NET variable ("nchw" or "nhwc", tf32 only; anything else is ignored).
enum class CudaNetKind { nchw, nhwc };
inline CudaNetKind choose_cuda_net(bool low_precision, bool tf32, bool has_conv, std::int64_t batch,
                                   const char* force) {
  if (low_precision) return CudaNetKind::nhwc;
  if (!tf32) return CudaNetKind::nchw;
  if (force) {
    const std::string_view f(force);
    if (f == "nchw") return CudaNetKind::nchw;
    if (f == "nhwc") return CudaNetKind::nhwc;
  }
  return has_conv && batch >= 256 ? CudaNetKind::nhwc : CudaNetKind::nchw;
}

/// A dense layer's input is "spatial" (its weight rows need the NHWC permutation) only when it
/// has several positions and several channels: with one channel the two orders coincide.
inline bool dense_input_needs_permutation(std::int64_t c, std::int64_t hw) { return c > 1 && hw > 1; }

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

/// Max pooling's backward may run one thread per window, writing the window's k² inputs
/// (mixed_kernels.cu, maxpool_bwd_tiled_k), only where the windows tile the input: every input
/// in exactly one window (stride = window, no padding, no rows or columns left over). Otherwise
/// it gathers, per input, over the windows that contain it.
inline bool pool_windows_tile(std::int64_t k, std::int64_t s, std::int64_t p, std::int64_t h, std::int64_t w,
                              std::int64_t oh, std::int64_t ow) {
  return k > 0 && s == k && p == 0 && oh * k == h && ow * k == w;
}

/// Whether the pooling kernels may index with int32 (64-bit division is emulated on the GPU,
/// and index arithmetic is most of these kernels' work): every input and output index fits.
inline bool pool_fits_int32(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t oh,
                            std::int64_t ow) {
  constexpr std::int64_t lim = 2147483647;
  const auto fits = [&](std::int64_t a, std::int64_t b) { return a <= lim / (b > 0 ? b : 1); };
  return fits(n, c) && fits(n * c, h) && fits(n * c * h, w) && n * c * h * w < lim && fits(n * c, oh) &&
         fits(n * c * oh, ow) && n * c * oh * ow < lim;
}

}  // namespace dlsweep::trainer::kernels::cuda
