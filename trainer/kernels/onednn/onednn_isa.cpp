#include "trainer/kernels/onednn/onednn_isa.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

#include <fmt/format.h>

namespace dlsweep::trainer::kernels {

std::string onednn_isa_name() {
  using I = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case I::sse41: return "sse41";
    case I::avx: return "avx";
    case I::avx2: return "avx2";
    case I::avx2_vnni: return "avx2_vnni";
    case I::avx512_mic: return "avx512_mic";
    case I::avx512_mic_4ops: return "avx512_mic_4ops";
    case I::avx512_core: return "avx512_core";
    case I::avx512_core_vnni: return "avx512_core_vnni";
    case I::avx512_core_bf16: return "avx512_core_bf16";
    case I::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

namespace {
bool probe_native_bf16() {
  const auto isa = dnnl::get_effective_cpu_isa();
  if (isa != dnnl::cpu_isa::avx512_core_bf16 && isa != dnnl::cpu_isa::avx512_core_amx) return false;
  try {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    const dnnl::memory::desc a({64, 64}, dt::bf16, tag::ab), b({64, 64}, dt::bf16, tag::ab), c({64, 64}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
    return std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
  } catch (const dnnl::error&) {
    return false;
  }
}
}  // namespace

bool onednn_has_native_bf16() {
  // oneDNN fixes its ISA (and DNNL_MAX_CPU_ISA) at its first dispatch, so the answer never changes.
  static const bool native = probe_native_bf16();
  return native;
}

bool onednn_has_amx() { return dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx; }

std::string_view bf16_path_name() { return onednn_has_native_bf16() ? "native" : "emulated"; }

std::string bf16_path_description(bool emulation_requested) {
  if (emulation_requested)
    return fmt::format("bf16 emulated (bf16_kernels: emulated; fp32 kernels on bf16-rounded operands; oneDNN isa {}, "
                       "native bf16 kernels: {})",
                       onednn_isa_name(), onednn_has_native_bf16() ? "yes" : "no");
  if (onednn_has_native_bf16())
    return fmt::format(
        "bf16 native (oneDNN bf16 kernels for matmul, convolution, pooling, batch norm and eltwise; fp32 master "
        "weights, optimizer state and loss; oneDNN isa {})",
        onednn_isa_name());
  return fmt::format("bf16 emulated (fp32 kernels on bf16-rounded operands; oneDNN isa {}, native bf16 kernels: no)",
                     onednn_isa_name());
}

}  // namespace dlsweep::trainer::kernels
