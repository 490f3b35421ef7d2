// onednn_isa.hpp — what oneDNN can do on this CPU, asked of oneDNN itself (never parsed from
// /proc/cpuinfo): the instruction set it dispatches to (respecting DNNL_MAX_CPU_ISA) and
// whether it has native bf16 kernels here (AVX512-BF16 or AMX), which decides the path
// `precision: bf16` takes (onednn_net.hpp). The trainer's first log line, its eval records and
// the throughput bench report the path that ran.
#pragma once

#include <string>
#include <string_view>

namespace dlsweep::trainer::kernels {

/// oneDNN's effective ISA, lower case as in its verbose output ("avx2", "avx512_core_amx").
std::string onednn_isa_name();

/// True when oneDNN runs bf16 matmul with hardware bf16 instructions on this CPU: the
/// effective ISA is avx512_core_bf16 or above AND a bf16 matmul primitive gets a non-reference
/// implementation. False on AVX2 machines, and under DNNL_MAX_CPU_ISA caps below AVX512_CORE_BF16.
bool onednn_has_native_bf16();

/// True when oneDNN dispatches to AMX here (its bf16 kernels then run on AMX tiles).
bool onednn_has_amx();

/// The path `precision: bf16` takes on the oneDNN backend here: "native" (bf16 memory
/// descriptors, oneDNN's bf16 kernels) when onednn_has_native_bf16(), else "emulated" (fp32
/// kernels on operands rounded to bf16).
std::string_view bf16_path_name();

/// How `precision: bf16` runs in this build on this CPU, in one phrase for logs and benches:
/// e.g. "bf16 emulated (fp32 kernels on bf16-rounded operands; oneDNN isa avx2, native bf16
/// kernels: no)" or "bf16 native (oneDNN bf16 kernels for ...; oneDNN isa avx512_core_bf16)".
/// `emulation_requested`: the run asked for emulation (`bf16_kernels: emulated`), which the
/// phrase says, with whether native kernels were there to be had.
std::string bf16_path_description(bool emulation_requested = false);

}  // namespace dlsweep::trainer::kernels
