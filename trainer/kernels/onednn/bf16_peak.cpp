#include "trainer/kernels/onednn/bf16_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

namespace dlsweep::trainer::kernels {

namespace {

constexpr int kChains = 12;  // enough independent accumulators to hide either instruction's latency

// (Not _mm512_reduce_add_ps: GCC 12 warns inside it.)
__attribute__((target("avx512f"))) inline float lane_sum(const __m512 (&a)[kChains]) {
  __m512 s = a[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, a[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float t = 0;
  for (float v : lanes) t += v;
  return t;
}

// Each returns a sum of its accumulators so that the loop is not optimised away.
// noipa: never inlined, cloned or treated as const, so each call runs where it is timed.
__attribute__((target("avx512f"), noipa)) float fma_chains(long n) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-9f);
  const __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(1e-9f);
  for (long k = 0; k < n; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_fmadd_ps(x, y, a[i]);
  return lane_sum(a);
}

__attribute__((target("avx512f,avx512bf16"), noipa)) float dpbf16_chains(long n) {
  __m512 a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-9f);
  // bf16 1.0 (0x3f80) and a tiny value (0x3000), 32 of each per register.
  const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f80));
  const __m512bh y = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3000));
  for (long k = 0; k < n; ++k)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_dpbf16_ps(a[i], x, y);
  return lane_sum(a);
}

template <class F>
double seconds_of(F f, long n, volatile float& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  asm volatile("" : "+r"(n) : : "memory");  // the call cannot move before the first clock read
  const float r = f(n);
  asm volatile("" : : "x"(r) : "memory");  // ... nor its result after the second
  const auto t1 = std::chrono::steady_clock::now();
  sink = sink + r;
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

Bf16Peak measure_bf16_peak() {
  Bf16Peak p;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16")) return p;
  constexpr long n = 250000;  // 3M instructions per side and round: ~1-4 ms each
  volatile float sink = 0;
  double f = 1e30, d = 1e30;
  for (int round = 0; round < 3; ++round) {
    f = std::min(f, seconds_of(fma_chains, n, sink));
    d = std::min(d, seconds_of(dpbf16_chains, n, sink));
  }
  const double insns = static_cast<double>(n) * kChains;
  p.fp32_gflops = insns * 16 * 2 / f / 1e9;  // 16 fp32 lanes, a multiply and an add
  p.bf16_gflops = insns * 32 * 2 / d / 1e9;  // 32 bf16 pairs per register
  p.measured = true;
  return p;
}

std::string describe(const Bf16Peak& p) {
  if (!p.measured) return {};
  return fmt::format("this CPU's bf16 dot product (VDPBF16PS) peaks at {:.2f}x its fp32 FMA rate ({:.1f} vs {:.1f} "
                     "GFLOP/s on one core)",
                     p.ratio(), p.bf16_gflops, p.fp32_gflops);
}

}  // namespace dlsweep::trainer::kernels
