// bf16_peak.hpp — what this CPU's bf16 dot-product instruction delivers next to its fp32 FMA,
// measured on the calling thread. AVX512-BF16 exists in two very different forms: AMD Zen 4/5
// run VDPBF16PS (two bf16 multiply-adds per fp32 lane) at the FMA's rate, so bf16 kernels can
// reach twice the fp32 FLOP rate; Intel's Cooper Lake / Sapphire Rapids / Emerald Rapids cores
// issue it at half that rate, so on them, without AMX, native bf16 cannot beat fp32 at all
// (measured 0.49x on a 5th-generation Xeon VM). oneDNN reports "avx512_core_bf16" for both, so
// the trainer's first log line and bench_trainer_throughput measure the instruction instead of
// guessing from the CPU's name. Informational only: no path choice depends on a timing.
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
/// keeping each side's best (about 20 ms in all). The ratio is a property of the core (0.5 or
/// 2 on the CPUs seen), far from 1 either way, so a loaded machine does not blur it.
Bf16Peak measure_bf16_peak();

/// One phrase for logs and benches, e.g. "this CPU's bf16 dot product peaks at 0.49x its fp32
/// FMA rate (86.7 vs 177.7 GFLOP/s on one core)"; empty when not measured.
std::string describe(const Bf16Peak& p);

}  // namespace dlsweep::trainer::kernels
