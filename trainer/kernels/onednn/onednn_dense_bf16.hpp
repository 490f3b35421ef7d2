// onednn_dense_bf16.hpp — INTERNAL to the oneDNN backend (used by onednn_net_layers.cpp): one
// fully connected layer in native bf16, for CPUs where oneDNN has bf16 kernels (AVX512-BF16,
// AMX; onednn_isa.hpp). Same computation as OnednnDense (onednn_kernels.cpp) under
// Precision::bf16 (net.hpp):
//   forward : w16 = bf16(w) (to_bf16 of the fp32 master weights, every forward: the
//             optimizer updates the master), y = act(x16 · w16 + b) accumulated in fp32,
//             stored in bf16 (or fp32 when the layer is the net's output: the loss reads it)
//   backward: dz = bf16(dy ⊙ act'(y)), db = Σ_rows dz and dw = x16ᵀ · dz in fp32 straight into
//             the master gradients, dx = dz · w16ᵀ stored in bf16.
// Every matmul reads bf16 operands and accumulates in fp32 (oneDNN's brgemm bf16 kernels);
// the conversion fp32 → bf16 rounds to nearest even, as round_to_bf16 does.
#pragma once

#include <cstdint>
#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

#include "trainer/kernels/kernels.hpp"
#include "trainer/kernels/onednn/onednn_kernels.hpp"

namespace dlsweep::trainer::kernels {

/// Rows of a bf16 (or, for y/dy of an output layer, fp32) matrix: element (r, c) at data + r·ld + c.
struct Rows {
  void* data = nullptr;
  std::int64_t ld = 0;
};

/// What a native bf16 dense layer reads and writes (n rows, in -> out features).
struct DenseBf16Binding {
  std::int64_t n = 0, in = 0, out = 0;
  Rows x;                  ///< [n, in] bf16
  Rows y;                  ///< [n, out] bf16, or fp32 when y_f32
  bool y_f32 = false;      ///< the layer is the net's output (logits in fp32); dy is fp32 then too
  MatrixView w;            ///< [in, out] fp32 master weights
  const float* b = nullptr;  ///< [out] fp32 bias
  // Training only (dy.data null: forward-only kernel).
  Rows dy;                 ///< [n, out] like y; overwritten with dz by backward() when it is bf16
  MatrixView dw;           ///< [in, out] fp32, overwritten
  float* db = nullptr;     ///< [out] fp32, overwritten
  Rows dx;                 ///< [n, in] bf16; data null when no input gradient is needed
};

/// Builds the kernel (every primitive created here; forward/backward allocate nothing).
std::unique_ptr<DenseKernel> make_dense_bf16(OnednnKernels& k, Activation act, const DenseBf16Binding& b);

}  // namespace dlsweep::trainer::kernels
