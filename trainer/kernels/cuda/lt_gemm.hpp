// lt_gemm.hpp — one column-major GEMM through cuBLASLt with its types chosen at run time:
// D[m, n] = alpha·op(A)·op(B) + beta·D, A and B of one storage type (fp32, bf16, fp16), D of
// that type or fp32, fp32 accumulation (TF32 tensor cores when A/B are fp32 and tf32 is asked).
// CudaNhwcNet's dense layers run on it (cublaslt_dense.hpp is the fp32 path with fused
// epilogues). The descriptor, layouts and algorithm (cuBLASLt's heuristic, its first choice:
// deterministic for a given GPU and shape) are made once in create(); run() only enqueues.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "common/result.hpp"

namespace dlsweep::trainer::kernels::cuda {

struct LtGemmSpec {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  cudaDataType_t ab_type = CUDA_R_32F;
  cudaDataType_t d_type = CUDA_R_32F;
  bool tf32 = false;  ///< fp32 A/B on TF32 tensor cores
};

class LtGemm {
 public:
  static Result<std::unique_ptr<LtGemm>> create(cublasLtHandle_t handle, const LtGemmSpec& spec, void* workspace,
                                                std::size_t workspace_bytes, std::string_view name);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  Status run(const void* a, const void* b, void* d, float beta, cudaStream_t stream) const;

 private:
  LtGemm() = default;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::string name_;
};

}  // namespace dlsweep::trainer::kernels::cuda
