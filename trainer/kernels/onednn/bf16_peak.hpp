// bf16_peak.hpp — what this CPU's bf16 dot-product instruction delivers next to its fp32 FMA,
// measured on the calling thread. AVX512-BF16 comes in very different speeds: on the AMD EPYC
// measured here VDPBF16PS (two bf16 multiply-adds per fp32 lane) lets oneDNN's bf16 kernels
// run at about twice their fp32 rate, while the 5th-generation Xeon VM measured here (AMX
// hidden) issues it at half the FMA's FLOP rate (0.48-0.50x), so there, without AMX, native
// bf16 cannot beat fp32 at all. oneDNN reports "avx512_core_bf16" for both, so the trainer's
// first log line and bench_trainer_throughput measure the instruction instead of guessing from
// the CPU's name. Informational only: no path choice depends on a timing. (With AMX, oneDNN's
// bf16 kernels run on its tiles, which this does not measure; callers do not use it there.)
#pragma once

#include <string>

namespace dlsweep::trainer::kernels {

struct Bf16Peak {
  bool measured = false;      ///< false when the CPU lacks AVX512-BF16 (nothing to measure)
  double fp32_gflops = 0;     ///< VFMADD231PS zmm, 12 independent chains, one thread
  double bf16_gflops = 0;     ///< VDPBF16PS zmm, the same
  double ratio() const { return fp32_gflops > 0 ? bf16_gflops / fp32_gflops : 0; }
};

/// Measures both instructions' throughput on the calling thread, alternating three times and
/// keeping each side's best (a few ms in all). The ratio is a property of the core (0.5 on the
/// Xeon measured), far from 1, so a loaded machine does not blur it into the other answer.
Bf16Peak measure_bf16_peak();

/// One phrase for logs and benches, e.g. "this CPU's bf16 dot product peaks at 0.49x its fp32
/// FMA rate (86.7 vs 177.7 GFLOP/s on one core)"; empty when not measured.
std::string describe(const Bf16Peak& p);

}  // namespace dlsweep::trainer::kernels
