#include "trainer/kernels/precision.hpp"

#include <fmt/format.h>

namespace dlsweep::trainer::kernels {

Result<Precision> parse_precision(std::string_view s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "bf16") return Precision::bf16;
  if (s == "tf32") return Precision::tf32;
  if (s == "fp16") return Precision::fp16;
  return fail_as(ErrorKind::bad_input, fmt::format("unknown precision '{}'", s), "precision",
                 "use fp32, bf16, tf32 or fp16");
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

bool uses_master_weights(Precision p) { return p == Precision::bf16 || p == Precision::fp16; }
bool uses_loss_scaling(Precision p) { return p == Precision::fp16; }

}  // namespace dlsweep::trainer::kernels
