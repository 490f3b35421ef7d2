#include "trainer/kernels/cuda/lt_gemm.hpp"

#include <fmt/format.h>

#include "trainer/kernels/cuda/cublaslt_dense.hpp"

namespace dlsweep::trainer::kernels::cuda {

namespace {

Status check(cublasStatus_t s, std::string_view what, std::string_view name) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return fail_as(ErrorKind::resources, fmt::format("cuBLASLt {} {} failed: {}", name, what, cublas_status_text(s)),
                 "kernels: cuda", "check the GPU, the driver and that the shapes are supported");
}

}  // namespace

Result<std::unique_ptr<LtGemm>> LtGemm::create(cublasLtHandle_t handle, const LtGemmSpec& s, void* workspace,
                                               std::size_t workspace_bytes, std::string_view name) {
  if (s.m < 1 || s.n < 1 || s.k < 1)
    return fail(fmt::format("GEMM {}: invalid shape m={} n={} k={}", name, s.m, s.n, s.k), "kernels: cuda");
  std::unique_ptr<LtGemm> g(new LtGemm());
  g->handle_ = handle;
  g->workspace_ = workspace;
  g->workspace_bytes_ = workspace_bytes;
  g->name_ = std::string(name);
  const cublasComputeType_t ct =
      s.ab_type == CUDA_R_32F && s.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (auto st = check(cublasLtMatmulDescCreate(&g->desc_, ct, CUDA_R_32F), "descriptor", name); !st)
    return std::unexpected(st.error());
  const cublasOperation_t ta = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(g->desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  cublasLtMatmulDescSetAttribute(g->desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  // Stored shapes (column-major): A is m×k (or k×m transposed), B k×n (or n×k).
  const std::uint64_t ar = static_cast<std::uint64_t>(s.trans_a ? s.k : s.m),
                      ac = static_cast<std::uint64_t>(s.trans_a ? s.m : s.k),
                      br = static_cast<std::uint64_t>(s.trans_b ? s.n : s.k),
                      bc = static_cast<std::uint64_t>(s.trans_b ? s.k : s.n);
  if (auto st = check(cublasLtMatrixLayoutCreate(&g->a_, s.ab_type, ar, ac, s.lda), "layout A", name); !st)
    return std::unexpected(st.error());
  if (auto st = check(cublasLtMatrixLayoutCreate(&g->b_, s.ab_type, br, bc, s.ldb), "layout B", name); !st)
    return std::unexpected(st.error());
  if (auto st = check(cublasLtMatrixLayoutCreate(&g->d_, s.d_type, static_cast<std::uint64_t>(s.m),
                                                 static_cast<std::uint64_t>(s.n), s.ldd),
                      "layout D", name);
      !st)
    return std::unexpected(st.error());
  cublasLtMatmulPreference_t pref = nullptr;
  if (auto st = check(cublasLtMatmulPreferenceCreate(&pref), "preference", name); !st)
    return std::unexpected(st.error());
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                       sizeof workspace_bytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(handle, g->desc_, g->a_, g->b_, g->d_, g->d_, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (auto st = check(hs, "heuristic", name); !st) return std::unexpected(st.error());
  if (found < 1)
    return fail_as(ErrorKind::resources,
                   fmt::format("cuBLASLt has no algorithm for the {} GEMM [{}x{}x{}]", name, s.m, s.n, s.k),
                   "kernels: cuda", "try another batch size or precision");
  g->algo_ = result.algo;
  return g;
}

LtGemm::~LtGemm() {
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  if (desc_) cublasLtMatmulDescDestroy(desc_);
}

Status LtGemm::run(const void* a, const void* b, void* d, float beta, cudaStream_t stream) const {
  const float one = 1.0f;
  return check(cublasLtMatmul(handle_, desc_, &one, a, a_, b, b_, &beta, d, d_, d, d_, &algo_, workspace_,
                              workspace_bytes_, stream),
               "run", name_);
}

}  // namespace dlsweep::trainer::kernels::cuda
