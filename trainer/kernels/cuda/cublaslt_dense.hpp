// cublaslt_dense.hpp — a dense layer (kernels.hpp's contract: y = act(x·w + b), row-major,
// padded strides) on the GPU through cuBLASLt, the bias and ReLU fused into the forward
// GEMM's epilogue (CUBLASLT_EPILOGUE_RELU_BIAS / _BIAS). Backward: dz = dy ⊙ relu'(y) and
// db = Σ_rows dz in one kernel (nn_kernels.cu), then dw = xᵀ·dz and dx = dz·wᵀ as two GEMMs.
//
// Row-major [r, c] with stride ld is column-major [c, r] with the same ld, so the GEMMs run
// transposed: yᵀ[out,n] = wᵀ[out,in]·xᵀ[in,n];  dwᵀ[out,in] = dzᵀ[out,n]·x[n,in];
// dxᵀ[in,n] = w[in,out]·dzᵀ[out,n]. Descriptors and algorithms (cuBLASLt's heuristic) are
// chosen once in create(); forward()/backward() only enqueue on the stream (device pointers,
// nothing allocated, no host synchronisation). fp32 or tf32 (tensor-core inputs rounded to
// 10-bit mantissas, fp32 accumulation); bf16/fp16 are not implemented here yet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "common/result.hpp"

namespace dlsweep::trainer::kernels::cuda {

struct DenseShape {
  std::int64_t n = 0, in = 0, out = 0;          ///< batch rows, input and output features
  std::int64_t ld_x = 0, ld_w = 0, ld_y = 0;    ///< row strides of x [n,in], w [in,out], y [n,out]
  std::int64_t ld_dx = 0;                       ///< of dx [n,in] (0: no dx)
};

/// "what failed: cuBLAS status name" for errors.
std::string cublas_status_text(cublasStatus_t s);

class CublasLtDense {
 public:
  /// Chooses the algorithms for `shape`. `workspace` (device, `workspace_bytes`) is shared by
  /// the layer's GEMMs and, before them in stream order, the bias gradient's partial sums
  /// (bias_grad_scratch_bytes); 32 MiB is plenty. Errors when cuBLASLt has no algorithm for a GEMM.
  /// `autotune`: time cuBLASLt's first 8 candidate algorithms per GEMM on scratch buffers and
  /// keep the fastest (off: its first, the heuristic's choice). The choice can differ between
  /// runs, and with it the GEMMs' rounding, so runs that must repeat bit for bit leave it off.
  static Result<std::unique_ptr<CublasLtDense>> create(cublasLtHandle_t handle, const DenseShape& shape, bool relu,
                                                       bool tf32, void* workspace, std::size_t workspace_bytes,
                                                       bool autotune = false);
  ~CublasLtDense();
  CublasLtDense(const CublasLtDense&) = delete;
  CublasLtDense& operator=(const CublasLtDense&) = delete;

  /// y = act(x·w + b).
  Status forward(const float* x, const float* w, const float* b, float* y, cudaStream_t stream);
  /// dy ← dz; dw, db overwritten; dx written when not null (requires shape.ld_dx).
  Status backward(const float* x, const float* w, const float* y, float* dy, float* dw, float* db, float* dx,
                  cudaStream_t stream);
  /// backward() in its two parts (for profiling): the epilogue's (dz, db), then the GEMMs.
  Status backward_epilogue(const float* y, float* dy, float* db, cudaStream_t stream);
  Status backward_gemms(const float* x, const float* w, const float* dz, float* dw, float* dx, cudaStream_t stream);

  struct Gemm;  // a descriptor, its four layouts and its algorithm

 private:
  CublasLtDense() = default;
  cublasLtHandle_t handle_ = nullptr;
  DenseShape shape_;
  bool relu_ = false;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::unique_ptr<Gemm> fwd_, bwd_w_, bwd_x_;
};

}  // namespace dlsweep::trainer::kernels::cuda
