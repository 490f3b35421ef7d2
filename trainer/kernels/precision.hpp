// precision.hpp — the one arithmetic-format enum of dlsweep-train, its names and what each
// format implies (every backend and the loop use it; params.json's `precision` parses to it).
//
//   fp32  all float;
//   bf16  bf16 activations, activation gradients and weight copies; fp32 master weights,
//         parameter gradients and accumulation (CPU: oneDNN native or emulated);
//   tf32  float storage, tensor-core GEMMs/convolutions on 10-bit mantissa inputs (GPU only);
//   fp16  as bf16 with half, plus dynamic loss scaling (kernels/cuda/loss_scale.hpp; GPU only).
#pragma once

#include <string_view>

#include "common/result.hpp"

namespace dlsweep::trainer::kernels {

enum class Precision { fp32, bf16, tf32, fp16 };

/// "fp32", "bf16", "tf32", "fp16"; anything else is an error (where "precision") listing them.
Result<Precision> parse_precision(std::string_view s);
std::string_view precision_name(Precision p);
/// bf16 and fp16 keep fp32 master weights beside the low-precision copies.
bool uses_master_weights(Precision p);
/// Only fp16 needs loss scaling (bf16 has fp32's exponent range).
bool uses_loss_scaling(Precision p);

}  // namespace dlsweep::trainer::kernels
