// bf16.hpp — bfloat16 rounding of fp32 values (round to nearest, ties to even), the one
// definition both backends use to apply Precision::bf16 (net.hpp) where no native bf16
// arithmetic exists, and the conversion native bf16 kernels use for their weight copies. A
// rounded value is exactly representable in bf16.
#pragma once

#include <cstdint>
#include <cstring>

namespace dlsweep::trainer::kernels {

/// x rounded to the nearest bfloat16, kept in a float. Inf and NaN are returned unchanged;
/// finite values beyond the largest bf16 round to infinity, as a conversion would.
inline float round_to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

/// round_to_bf16 over n floats in place (vectorised; n may be 0).
void round_to_bf16(float* p, std::int64_t n);

/// dst[i] = the bfloat16 bits of round_to_bf16(src[i]) (NaN stays a quiet NaN), for native
/// bf16 kernels' operands; vectorised, n may be 0.
void to_bf16(const float* src, std::uint16_t* dst, std::int64_t n);

}  // namespace dlsweep::trainer::kernels
