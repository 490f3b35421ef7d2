#include "trainer/kernels/cuda/cublaslt_dense.hpp"

#include <array>
#include <span>

#include <fmt/format.h>

#include "trainer/kernels/cuda/device_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {

std::string cublas_status_text(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return fmt::format("cuBLAS status {}", static_cast<int>(s));
  }
}

struct CublasLtDense::Gemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Gemm() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

Status check(cublasStatus_t s, std::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return fail_as(ErrorKind::resources, fmt::format("cuBLASLt {} failed: {}", what, cublas_status_text(s)),
                 "kernels: cuda", "check the GPU, the driver and that the shapes are supported");
}

// Autotuning: cuBLASLt's first candidates for a GEMM, each timed on scratch buffers of the
// GEMM's shape (2 untimed runs, then the best of 5 timed); the index of the fastest. Like
// cuDNN's benchmark mode, it costs a few milliseconds per GEMM at create() time.
constexpr int kAutotuneCandidates = 8;

Result<std::size_t> fastest(cublasLtHandle_t h, const CublasLtDense::Gemm& g,
                            std::span<const cublasLtMatmulHeuristicResult_t> cands, std::int64_t a_floats,
                            std::int64_t b_floats, std::int64_t d_floats, std::int64_t m, bool bias, void* workspace,
                            std::size_t workspace_bytes) {
  float *a = nullptr, *b = nullptr, *d = nullptr, *bias_buf = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  auto cleanup = [&] {
    cudaFree(a), cudaFree(b), cudaFree(d), cudaFree(bias_buf);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
  };
  const bool ok = cudaMalloc(reinterpret_cast<void**>(&a), a_floats * sizeof(float)) == cudaSuccess &&
                  cudaMalloc(reinterpret_cast<void**>(&b), b_floats * sizeof(float)) == cudaSuccess &&
                  cudaMalloc(reinterpret_cast<void**>(&d), d_floats * sizeof(float)) == cudaSuccess &&
                  cudaMalloc(reinterpret_cast<void**>(&bias_buf), m * sizeof(float)) == cudaSuccess &&
                  cudaMemset(a, 0, a_floats * sizeof(float)) == cudaSuccess &&
                  cudaMemset(b, 0, b_floats * sizeof(float)) == cudaSuccess &&
                  cudaMemset(bias_buf, 0, m * sizeof(float)) == cudaSuccess &&
                  cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess;
  if (!ok) {
    cleanup();
    cudaGetLastError();
    return fail_as(ErrorKind::resources, "autotuning a GEMM: out of GPU memory for its scratch buffers",
                   "kernels: cuda", "autotune off, or a smaller batch");
  }
  if (bias) cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_buf, sizeof bias_buf);
  const float one = 1.0f, zero = 0.0f;
  std::size_t best = 0;
  float best_ms = -1;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    auto run = [&] {
      return cublasLtMatmul(h, g.desc, &one, a, g.a, b, g.b, &zero, d, g.d, d, g.d, &cands[i].algo, workspace,
                            workspace_bytes, nullptr) == CUBLAS_STATUS_SUCCESS;
    };
    if (!run() || !run()) continue;  // a candidate that cannot run is skipped
    float ms_min = -1;
    for (int rep = 0; rep < 5; ++rep) {
      float ms = 0;
      if (cudaEventRecord(e0) != cudaSuccess || !run() || cudaEventRecord(e1) != cudaSuccess ||
          cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
        break;
      if (ms_min < 0 || ms < ms_min) ms_min = ms;
    }
    if (ms_min >= 0 && (best_ms < 0 || ms_min < best_ms)) best_ms = ms_min, best = i;
  }
  cleanup();
  cudaGetLastError();
  return best;
}

// A column-major GEMM D[m,n] = op(A)·op(B); `a_rows`×`a_cols` etc. are the stored shapes.
Result<std::unique_ptr<CublasLtDense::Gemm>> make_gemm(cublasLtHandle_t h, bool tf32, cublasOperation_t ta,
                                                       cublasOperation_t tb, std::int64_t a_rows, std::int64_t a_cols,
                                                       std::int64_t lda, std::int64_t b_rows, std::int64_t b_cols,
                                                       std::int64_t ldb, std::int64_t m, std::int64_t n,
                                                       std::int64_t ldd, cublasLtEpilogue_t epilogue,
                                                       void* workspace, std::size_t workspace_bytes, bool autotune,
                                                       std::string_view name) {
  auto g = std::make_unique<CublasLtDense::Gemm>();
  const cublasComputeType_t ct = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (auto s = check(cublasLtMatmulDescCreate(&g->desc, ct, CUDA_R_32F), name); !s) return std::unexpected(s.error());
  if (auto s = check(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), name); !s)
    return std::unexpected(s.error());
  if (auto s = check(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), name); !s)
    return std::unexpected(s.error());
  if (auto s = check(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                     name);
      !s)
    return std::unexpected(s.error());
  auto layout = [&](cublasLtMatrixLayout_t* l, std::int64_t r, std::int64_t c, std::int64_t ld) {
    return check(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(c), ld),
                 name);
  };
  if (auto s = layout(&g->a, a_rows, a_cols, lda); !s) return std::unexpected(s.error());
  if (auto s = layout(&g->b, b_rows, b_cols, ldb); !s) return std::unexpected(s.error());
  if (auto s = layout(&g->d, m, n, ldd); !s) return std::unexpected(s.error());

  cublasLtMatmulPreference_t pref = nullptr;
  if (auto s = check(cublasLtMatmulPreferenceCreate(&pref), name); !s) return std::unexpected(s.error());
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                       sizeof workspace_bytes);
  std::array<cublasLtMatmulHeuristicResult_t, kAutotuneCandidates> results{};
  int found = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h, g->desc, g->a, g->b, g->d, g->d, pref,
                                                           autotune ? kAutotuneCandidates : 1, results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (auto s = check(hs, fmt::format("{} heuristic", name)); !s) return std::unexpected(s.error());
  if (found < 1)
    return fail_as(ErrorKind::resources, fmt::format("cuBLASLt has no algorithm for the {} GEMM [{}x{}]", name, m, n),
                   "kernels: cuda", "try another batch size or precision");
  g->algo = results[0].algo;
  if (autotune && found > 1) {
    auto best = fastest(h, *g, {results.data(), static_cast<std::size_t>(found)}, lda * a_cols, ldb * b_cols,
                        ldd * n, m, epilogue != CUBLASLT_EPILOGUE_DEFAULT, workspace, workspace_bytes);
    if (!best) return std::unexpected(best.error());
    g->algo = results[*best].algo;
  }
  return g;
}

}  // namespace

Result<std::unique_ptr<CublasLtDense>> CublasLtDense::create(cublasLtHandle_t handle, const DenseShape& s, bool relu,
                                                             bool tf32, void* workspace, std::size_t workspace_bytes,
                                                             bool autotune) {
  if (s.n < 1 || s.in < 1 || s.out < 1 || s.ld_x < s.in || s.ld_w < s.out || s.ld_y < s.out ||
      (s.ld_dx != 0 && s.ld_dx < s.in))
    return fail(fmt::format("invalid dense shape n={} in={} out={} (strides {}, {}, {}, {})", s.n, s.in, s.out, s.ld_x,
                            s.ld_w, s.ld_y, s.ld_dx),
                "kernels: cuda");
  if (workspace_bytes < bias_grad_scratch_bytes(s.n, s.out))
    return fail(fmt::format("dense n={} out={}: the workspace ({} bytes) is smaller than the bias gradient's "
                            "scratch ({} bytes)",
                            s.n, s.out, workspace_bytes, bias_grad_scratch_bytes(s.n, s.out)),
                "kernels: cuda");
  std::unique_ptr<CublasLtDense> k(new CublasLtDense());
  k->handle_ = handle;
  k->shape_ = s;
  k->relu_ = relu;
  k->workspace_ = workspace;
  k->workspace_bytes_ = workspace_bytes;
  const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  // yᵀ[out,n] = wᵀ[out,in] · xᵀ[in,n], bias and ReLU in the epilogue.
  auto fwd = make_gemm(handle, tf32, N, N, s.out, s.in, s.ld_w, s.in, s.n, s.ld_x, s.out, s.n, s.ld_y,
                       relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS, workspace, workspace_bytes, autotune, "forward");
  if (!fwd) return std::unexpected(fwd.error());
  k->fwd_ = std::move(*fwd);
  // dwᵀ[out,in] = dzᵀ[out,n] · (xᵀ[in,n])ᵀ.
  auto bw = make_gemm(handle, tf32, N, T, s.out, s.n, s.ld_y, s.in, s.n, s.ld_x, s.out, s.in, s.ld_w,
                      CUBLASLT_EPILOGUE_DEFAULT, workspace, workspace_bytes, autotune, "weight gradient");
  if (!bw) return std::unexpected(bw.error());
  k->bwd_w_ = std::move(*bw);
  if (s.ld_dx != 0) {
    // dxᵀ[in,n] = (wᵀ[out,in])ᵀ · dzᵀ[out,n].
    auto bx = make_gemm(handle, tf32, T, N, s.out, s.in, s.ld_w, s.out, s.n, s.ld_y, s.in, s.n, s.ld_dx,
                        CUBLASLT_EPILOGUE_DEFAULT, workspace, workspace_bytes, autotune,
                        "input gradient");
    if (!bx) return std::unexpected(bx.error());
    k->bwd_x_ = std::move(*bx);
  }
  return k;
}

CublasLtDense::~CublasLtDense() = default;

Status CublasLtDense::forward(const float* x, const float* w, const float* b, float* y, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  if (auto s = check(cublasLtMatmulDescSetAttribute(fwd_->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
                     "forward bias");
      !s)
    return s;
  return check(cublasLtMatmul(handle_, fwd_->desc, &one, w, fwd_->a, x, fwd_->b, &zero, y, fwd_->d, y, fwd_->d,
                              &fwd_->algo, workspace_, workspace_bytes_, stream),
               "forward");
}

Status CublasLtDense::backward(const float* x, const float* w, const float* y, float* dy, float* dw, float* db,
                               float* dx, cudaStream_t stream) {
  if (dx && !bwd_x_)
    return fail("this dense kernel was built without an input gradient (ld_dx = 0)", "kernels: cuda");
  if (auto s = backward_epilogue(y, dy, db, stream); !s) return s;
  return backward_gemms(x, w, dy, dw, dx, stream);
}

Status CublasLtDense::backward_epilogue(const float* y, float* dy, float* db, cudaStream_t stream) {
  if (auto e = bias_act_backward(dy, y, db, shape_.n, shape_.out, shape_.ld_y, relu_, static_cast<double*>(workspace_),
                                 stream);
      e != cudaSuccess)
    return fail_as(ErrorKind::resources, fmt::format("bias/activation backward launch failed: {}", cudaGetErrorString(e)),
                   "kernels: cuda");
  return {};
}

Status CublasLtDense::backward_gemms(const float* x, const float* w, const float* dz, float* dw, float* dx,
                                     cudaStream_t stream) {
  if (dx && !bwd_x_)
    return fail("this dense kernel was built without an input gradient (ld_dx = 0)", "kernels: cuda");
  const float one = 1.0f, zero = 0.0f;
  if (auto s = check(cublasLtMatmul(handle_, bwd_w_->desc, &one, dz, bwd_w_->a, x, bwd_w_->b, &zero, dw, bwd_w_->d, dw,
                                    bwd_w_->d, &bwd_w_->algo, workspace_, workspace_bytes_, stream),
                     "weight gradient");
      !s)
    return s;
  if (!dx) return {};
  return check(cublasLtMatmul(handle_, bwd_x_->desc, &one, w, bwd_x_->a, dz, bwd_x_->b, &zero, dx, bwd_x_->d, dx,
                              bwd_x_->d, &bwd_x_->algo, workspace_, workspace_bytes_, stream),
               "input gradient");
}

}  // namespace dlsweep::trainer::kernels::cuda
