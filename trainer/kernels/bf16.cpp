#include "trainer/kernels/bf16.hpp"

namespace dlsweep::trainer::kernels {

// Branch-free integer form of round_to_bf16 so the loop vectorises; the clones pick AVX2 or
// AVX-512 at load time (the Debian baseline is SSE2). Same bits as the scalar version.
__attribute__((target_clones("avx512f", "avx2", "default"))) void round_to_bf16(float* p, std::int64_t n) {
  using word = std::uint32_t __attribute__((may_alias));  // float bits, without breaking aliasing rules
  auto* u = reinterpret_cast<word*>(p);
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t v = u[i];
    const std::uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) & 0xffff0000u;
    u[i] = (v & 0x7f800000u) == 0x7f800000u ? v : rounded;
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void to_bf16(const float* src, std::uint16_t* dst,
                                                                          std::int64_t n) {
  using word = const std::uint32_t __attribute__((may_alias));
  auto* u = reinterpret_cast<word*>(src);
#pragma GCC ivdep
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t v = u[i];
    const std::uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
    dst[i] = static_cast<std::uint16_t>((v & 0x7fffffffu) > 0x7f800000u ? (v >> 16) | 0x40u : rounded);
  }
}

}  // namespace dlsweep::trainer::kernels
