// mixed_kernels.cu — see mixed_kernels.hpp.
#include "trainer/kernels/cuda/mixed_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "trainer/kernels/cuda/nhwc_layout.hpp"

namespace dlsweep::trainer::kernels::cuda {
namespace {

using i64 = std::int64_t;
constexpr int kThreads = 256;

unsigned blocks_for(i64 count) {
  i64 b = (count + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  if (b > 65535 * 16) b = 65535 * 16;
  return static_cast<unsigned>(b);
}

template <class T> __device__ __forceinline__ float ld(const T* p, i64 i);
template <> __device__ __forceinline__ float ld<float>(const float* p, i64 i) { return p[i]; }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16* p, i64 i) {
  return __bfloat162float(p[i]);
}
template <> __device__ __forceinline__ float ld<__half>(const __half* p, i64 i) { return __half2float(p[i]); }

template <class T> __device__ __forceinline__ void st(T* p, i64 i, float v);
template <> __device__ __forceinline__ void st<float>(float* p, i64 i, float v) { p[i] = v; }
template <> __device__ __forceinline__ void st<__nv_bfloat16>(__nv_bfloat16* p, i64 i, float v) {
  p[i] = __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ void st<__half>(__half* p, i64 i, float v) { p[i] = __float2half_rn(v); }

#define GRID_STRIDE(i, count)                                                                   \
  for (i64 i = blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<i64>(gridDim.x) * blockDim.x)

// Runs BODY with T bound to the storage type of `t`.
#define DISPATCH(t, BODY)                  \
  switch (t) {                             \
    case DType::f32: {                     \
      using T = float;                     \
      BODY;                                \
      break;                               \
    }                                      \
    case DType::bf16: {                    \
      using T = __nv_bfloat16;             \
      BODY;                                \
      break;                               \
    }                                      \
    case DType::f16: {                     \
      using T = __half;                    \
      BODY;                                \
      break;                               \
    }                                      \
  }

template <class T>
__global__ void to_nhwc_k(const float* src, i64 ld_src, T* dst, i64 c, i64 hw, i64 total) {
  GRID_STRIDE(j, total) {
    const i64 per = hw * c, s = j / per, rem = j % per, p = rem / c, ch = rem % c;
    st(dst, j, src[s * ld_src + ch * hw + p]);
  }
}

template <class T>
__global__ void from_nhwc_k(const T* src, float* dst, i64 ld_dst, i64 c, i64 hw, i64 total, float beta) {
  GRID_STRIDE(i, total) {
    const i64 per = hw * c, s = i / per, rem = i % per, ch = rem / hw, p = rem % hw;
    const float v = ld(src, (s * hw + p) * c + ch);
    float* d = dst + s * ld_dst + ch * hw + p;
    *d = beta != 0.0f ? v + *d : v;
  }
}

template <class T>
__global__ void rows_to_nhwc_k(const float* w, i64 ld, T* dst, i64 c, i64 hw, i64 cols, i64 total) {
  GRID_STRIDE(j, total) {  // j = (p·c + ch)·cols + o
    const i64 o = j % cols, r = j / cols, p = r / c, ch = r % c;
    st(dst, j, w[(ch * hw + p) * ld + o]);
  }
}

__global__ void rows_from_nhwc_k(const float* src, float* dst, i64 ld, i64 c, i64 hw, i64 cols, i64 total) {
  GRID_STRIDE(i, total) {  // i = (ch·hw + p)·cols + o, the destination's row-major index
    const i64 o = i % cols, r = i / cols, ch = r / hw, p = r % hw;
    dst[r * ld + o] = src[(p * c + ch) * cols + o];
  }
}

template <class T>
__global__ void bias_act_k(T* y, const float* b, i64 c, i64 count, bool relu) {
  GRID_STRIDE(i, count) {
    float v = ld(y, i);
    if (b) v = v + b[i % c];
    if (relu) v = v > 0.0f ? v : 0.0f;
    st(y, i, v);
  }
}

template <class T>
__global__ void relu_fwd_k(const T* x, T* y, i64 count) {
  GRID_STRIDE(i, count) {
    const float v = ld(x, i);
    st(y, i, v > 0.0f ? v : 0.0f);
  }
}

template <class T>
__global__ void relu_bwd_k(const T* dy, const T* y, T* dx, i64 count, float beta) {
  GRID_STRIDE(i, count) {
    const float g = ld(y, i) > 0.0f ? ld(dy, i) : 0.0f;
    st(dx, i, beta != 0.0f ? g + ld(dx, i) : g);
  }
}

template <class T>
__global__ void add_k(const T* a, const T* b, T* y, i64 count, bool relu) {
  GRID_STRIDE(i, count) {
    const float v = ld(a, i) + ld(b, i);
    st(y, i, relu && !(v > 0.0f) ? 0.0f : v);
  }
}

template <class T>
__global__ void accumulate_k(T* dst, const T* src, i64 count, float beta) {
  GRID_STRIDE(i, count) {
    const float v = ld(src, i);
    st(dst, i, beta != 0.0f ? v + ld(dst, i) : v);
  }
}

template <class T>
__global__ void gap_fwd_k(const T* x, T* y, i64 c, i64 hw, i64 planes) {
  GRID_STRIDE(q, planes) {  // q = s·c + ch
    const i64 s = q / c, ch = q % c;
    const T* base = x + s * hw * c + ch;
    double acc = 0;
    for (i64 p = 0; p < hw; ++p) acc += ld(base, p * c);
    st(y, q, static_cast<float>(acc / static_cast<double>(hw)));
  }
}

template <class T>
__global__ void gap_bwd_k(const T* dy, T* dx, i64 c, i64 hw, i64 count, float beta) {
  GRID_STRIDE(i, count) {  // i = (s·hw + p)·c + ch
    const i64 ch = i % c, s = i / (hw * c);
    const float g = static_cast<float>(static_cast<double>(ld(dy, s * c + ch)) / static_cast<double>(hw));
    st(dx, i, beta != 0.0f ? g + ld(dx, i) : g);
  }
}

// Pooling indexes with I: int32 where every index of the input and output fits (the common
// case: 64-bit division is emulated on the GPU, and the index arithmetic of these kernels is
// most of their work), int64 beyond.
template <class I>
struct PoolGeomI {
  I n, c, h, w, oh, ow, k, s, p;
  explicit PoolGeomI(const PoolGeom& g)
      : n(static_cast<I>(g.n)), c(static_cast<I>(g.c)), h(static_cast<I>(g.h)), w(static_cast<I>(g.w)),
        oh(static_cast<I>(g.oh)), ow(static_cast<I>(g.ow)), k(static_cast<I>(g.k)), s(static_cast<I>(g.s)),
        p(static_cast<I>(g.p)) {}
};

#define GRID_STRIDE_I(I, i, count)                                                     \
  for (I i = static_cast<I>(blockIdx.x * static_cast<i64>(blockDim.x) + threadIdx.x); i < (count); \
       i += static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x))

// The first maximum of output window (oy, ox) of sample s, channel ch: its input index, or -1.
template <class T, class I>
__device__ I window_argmax(const T* x, const PoolGeomI<I>& g, I s, I oy, I ox, I ch, float* best) {
  I arg = -1;
  float m = 0.0f;
  for (I ky = 0; ky < g.k; ++ky) {
    const I iy = oy * g.s - g.p + ky;
    if (iy < 0 || iy >= g.h) continue;
    for (I kx = 0; kx < g.k; ++kx) {
      const I ix = ox * g.s - g.p + kx;
      if (ix < 0 || ix >= g.w) continue;
      const I idx = ((s * g.h + iy) * g.w + ix) * g.c + ch;
      const float v = ld(x, idx);
      if (arg < 0 || v > m) m = v, arg = idx;
    }
  }
  *best = m;
  return arg;
}

template <class T, class I>
__global__ void maxpool_fwd_k(const T* x, T* y, PoolGeomI<I> g, I count) {
  GRID_STRIDE_I(I, i, count) {  // i = ((s·oh + oy)·ow + ox)·c + ch
    const I ch = i % g.c, r = i / g.c, ox = r % g.ow, r2 = r / g.ow, oy = r2 % g.oh, s = r2 / g.oh;
    float m = 0.0f;
    window_argmax(x, g, s, oy, ox, ch, &m);
    st(y, i, m);
  }
}

// The general backward: a gather over the windows that contain each input (overlapping
// windows, padding, inputs no window covers), so no atomics and the same result every run.
template <class T, class I>
__global__ void maxpool_bwd_k(const T* x, const T* dy, T* dx, PoolGeomI<I> g, I count, float beta) {
  GRID_STRIDE_I(I, i, count) {  // i = ((s·h + iy)·w + ix)·c + ch
    const I ch = i % g.c, r = i / g.c, ix = r % g.w, r2 = r / g.w, iy = r2 % g.h, s = r2 / g.h;
    // Windows that contain iy: oy·s − p ≤ iy < oy·s − p + k.
    I oy0 = iy + g.p - g.k + 1;
    oy0 = oy0 <= 0 ? 0 : (oy0 + g.s - 1) / g.s;
    I oy1 = (iy + g.p) / g.s;
    if (oy1 >= g.oh) oy1 = g.oh - 1;
    I ox0 = ix + g.p - g.k + 1;
    ox0 = ox0 <= 0 ? 0 : (ox0 + g.s - 1) / g.s;
    I ox1 = (ix + g.p) / g.s;
    if (ox1 >= g.ow) ox1 = g.ow - 1;
    float acc = 0.0f;
    for (I oy = oy0; oy <= oy1; ++oy)
      for (I ox = ox0; ox <= ox1; ++ox) {
        float m;
        if (window_argmax(x, g, s, oy, ox, ch, &m) == i) acc += ld(dy, ((s * g.oh + oy) * g.ow + ox) * g.c + ch);
      }
    st(dx, i, beta != 0.0f ? acc + ld(dx, i) : acc);
  }
}

// The backward where the windows tile the input (stride = window, no padding, no remainder:
// the CNN's 2×2/2 pools): every input lies in exactly one window, so one thread per window
// finds its first maximum once and writes all k² inputs of it — the same values as the gather
// above (each input's sum has one term), without its k² argmax scans per input.
template <class T, class I>
__global__ void maxpool_bwd_tiled_k(const T* x, const T* dy, T* dx, PoolGeomI<I> g, I count, float beta) {
  GRID_STRIDE_I(I, i, count) {  // i = ((s·oh + oy)·ow + ox)·c + ch
    const I ch = i % g.c, r = i / g.c, ox = r % g.ow, r2 = r / g.ow, oy = r2 % g.oh, s = r2 / g.oh;
    float m;
    const I arg = window_argmax(x, g, s, oy, ox, ch, &m);
    const float d = ld(dy, i);
    for (I ky = 0; ky < g.k; ++ky)
      for (I kx = 0; kx < g.k; ++kx) {
        const I idx = ((s * g.h + oy * g.k + ky) * g.w + ox * g.k + kx) * g.c + ch;
        const float v = idx == arg ? 0.0f + d : 0.0f;  // 0 + d: the gather's sum, bit for bit (-0)
        st(dx, idx, beta != 0.0f ? v + ld(dx, idx) : v);
      }
  }
}

bool pool_int32(const PoolGeom& g) { return pool_fits_int32(g.n, g.c, g.h, g.w, g.oh, g.ow); }

// Per-channel sums over the rows of a [rows, c] tensor, one block per row range (see
// nhwc_layout.hpp): partials[(block·c + ch)·2 + {0, 1}].
template <class T>
__global__ void reduce_k(ReduceArgs a, i64 rpb, double* partials) {
  __shared__ double s1[kThreads], s2[kThreads];
  T* av = static_cast<T*>(a.a);
  const T* yv = static_cast<const T*>(a.y);
  const T* xv = static_cast<const T*>(a.x);
  const i64 r0 = blockIdx.x * rpb;
  i64 r1 = r0 + rpb;
  if (r1 > a.rows) r1 = a.rows;
  const int tid = threadIdx.x;
  for (i64 c0 = 0; c0 < a.c; c0 += kThreads) {
    const i64 ct = a.c - c0 < kThreads ? a.c - c0 : kThreads;
    const i64 phases = kThreads / ct;
    double acc1 = 0, acc2 = 0;
    if (tid < phases * ct) {
      const i64 ch = c0 + tid % ct, ph = tid / ct;
      const float mean = a.mode == ReduceMode::bn_grad ? a.mean[ch] : 0.0f;
      const float inv = a.mode == ReduceMode::bn_grad ? a.inv[ch] : 0.0f;
      for (i64 r = r0 + ph; r < r1; r += phases) {
        const i64 idx = r * a.c + ch;
        float v = ld(av, idx);
        switch (a.mode) {
          case ReduceMode::sum: acc1 += v; break;
          case ReduceMode::masked_sum:
            if (!(ld(yv, idx) > 0.0f)) {
              v = 0.0f;
              st(av, idx, 0.0f);
            }
            acc1 += v;
            break;
          case ReduceMode::moments:
            acc1 += v;
            acc2 += static_cast<double>(v) * v;
            break;
          case ReduceMode::bn_grad:
            if (a.relu && !(ld(yv, idx) > 0.0f)) {
              v = 0.0f;
              st(av, idx, 0.0f);
            }
            acc1 += v;
            acc2 += static_cast<double>(v) * ((ld(xv, idx) - mean) * inv);
            break;
        }
      }
    }
    s1[tid] = acc1;
    s2[tid] = acc2;
    __syncthreads();
    if (tid < ct) {
      double t1 = 0, t2 = 0;
      for (i64 ph = 0; ph < phases; ++ph) t1 += s1[ph * ct + tid], t2 += s2[ph * ct + tid];
      const i64 ch = c0 + tid;
      partials[(blockIdx.x * a.c + ch) * 2] = t1;
      partials[(blockIdx.x * a.c + ch) * 2 + 1] = t2;
    }
    __syncthreads();
  }
}

__global__ void reduce_finish_k(const double* partials, i64 blocks, i64 c, double* out1, double* out2) {
  GRID_STRIDE(ch, c) {
    double t1 = 0, t2 = 0;
    for (i64 b = 0; b < blocks; ++b) t1 += partials[(b * c + ch) * 2], t2 += partials[(b * c + ch) * 2 + 1];
    out1[ch] = t1;
    if (out2) out2[ch] = t2;
  }
}

__global__ void store_sums_k(const double* src, float* dst, i64 c) {
  GRID_STRIDE(i, c) { dst[i] = static_cast<float>(src[i]); }
}

__global__ void bn_finish_k(const double* sum, const double* sumsq, i64 c, i64 m, double eps, double momentum,
                            float* mean_out, float* inv_out, float* rmean, float* rvar) {
  GRID_STRIDE(ch, c) {
    const double md = static_cast<double>(m);
    const double mean = sum[ch] / md;
    double var = sumsq[ch] / md - mean * mean;
    if (var < 0) var = 0;
    mean_out[ch] = static_cast<float>(mean);
    inv_out[ch] = static_cast<float>(1.0 / sqrt(var + eps));
    const double unbiased = m > 1 ? var * md / (md - 1) : var;
    rmean[ch] = static_cast<float>((1 - momentum) * rmean[ch] + momentum * mean);
    rvar[ch] = static_cast<float>((1 - momentum) * rvar[ch] + momentum * unbiased);
  }
}

__global__ void bn_eval_k(const float* rmean, const float* rvar, i64 c, double eps, float* mean_out, float* inv_out) {
  GRID_STRIDE(ch, c) {
    mean_out[ch] = rmean[ch];
    inv_out[ch] = static_cast<float>(1.0 / sqrt(static_cast<double>(rvar[ch]) + eps));
  }
}

template <class T>
__global__ void bn_apply_k(const T* x, T* y, i64 c, i64 count, const float* mean, const float* inv,
                           const float* scale, const float* shift, bool relu) {
  GRID_STRIDE(i, count) {
    const i64 ch = i % c;
    float v = (ld(x, i) - mean[ch]) * inv[ch] * scale[ch] + shift[ch];
    if (relu) v = v > 0.0f ? v : 0.0f;
    st(y, i, v);
  }
}

template <class T>
__global__ void bn_bwd_k(const T* x, const T* g, T* dx, i64 c, i64 count, i64 m, const float* mean, const float* inv,
                         const float* scale, const double* sum_g, const double* sum_gx, float beta) {
  GRID_STRIDE(i, count) {
    const i64 ch = i % c;
    const float inv_m = static_cast<float>(1.0 / static_cast<double>(m));
    const float xh = (ld(x, i) - mean[ch]) * inv[ch];
    const float v = scale[ch] * inv[ch] *
                    (ld(g, i) - static_cast<float>(sum_g[ch]) * inv_m - xh * static_cast<float>(sum_gx[ch]) * inv_m);
    st(dx, i, beta != 0.0f ? v + ld(dx, i) : v);
  }
}

__global__ void bn_param_grads_k(const double* sum_g, const double* sum_gx, float* dscale, float* dshift, i64 c) {
  GRID_STRIDE(ch, c) {
    dscale[ch] = static_cast<float>(sum_gx[ch]);
    dshift[ch] = static_cast<float>(sum_g[ch]);
  }
}

#undef GRID_STRIDE

}  // namespace

cudaError_t to_nhwc(const float* src, i64 ld_src, void* dst, DType t, i64 n, i64 c, i64 hw, cudaStream_t stream) {
  const i64 total = n * c * hw;
  if (total <= 0) return cudaSuccess;
  DISPATCH(t, (to_nhwc_k<T><<<blocks_for(total), kThreads, 0, stream>>>(src, ld_src, static_cast<T*>(dst), c, hw, total)));
  return cudaGetLastError();
}

cudaError_t from_nhwc(const void* src, DType t, float* dst, i64 ld_dst, i64 n, i64 c, i64 hw, float beta,
                      cudaStream_t stream) {
  const i64 total = n * c * hw;
  if (total <= 0) return cudaSuccess;
  DISPATCH(t, (from_nhwc_k<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(src), dst, ld_dst, c,
                                                                          hw, total, beta)));
  return cudaGetLastError();
}

cudaError_t rows_to_nhwc(const float* w, i64 ld, void* dst, DType t, i64 c, i64 hw, i64 cols, cudaStream_t stream) {
  const i64 total = c * hw * cols;
  if (total <= 0) return cudaSuccess;
  DISPATCH(t, (rows_to_nhwc_k<T><<<blocks_for(total), kThreads, 0, stream>>>(w, ld, static_cast<T*>(dst), c, hw, cols,
                                                                              total)));
  return cudaGetLastError();
}

cudaError_t rows_from_nhwc(const float* src, float* dst, i64 ld, i64 c, i64 hw, i64 cols, cudaStream_t stream) {
  const i64 total = c * hw * cols;
  if (total <= 0) return cudaSuccess;
  rows_from_nhwc_k<<<blocks_for(total), kThreads, 0, stream>>>(src, dst, ld, c, hw, cols, total);
  return cudaGetLastError();
}

cudaError_t bias_act(void* y, DType t, const float* b, i64 rows, i64 c, bool relu, cudaStream_t stream) {
  const i64 count = rows * c;
  if (count <= 0 || (!b && !relu)) return cudaSuccess;
  DISPATCH(t, (bias_act_k<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(y), b, c, count, relu)));
  return cudaGetLastError();
}

cudaError_t relu_fwd(const void* x, void* y, DType t, i64 count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  DISPATCH(t, (relu_fwd_k<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                          count)));
  return cudaGetLastError();
}

cudaError_t relu_bwd(const void* dy, const void* y, void* dx, DType t, i64 count, float beta, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  DISPATCH(t, (relu_bwd_k<T><<<blocks_for(count), kThreads, 0, stream>>>(
                  static_cast<const T*>(dy), static_cast<const T*>(y), static_cast<T*>(dx), count, beta)));
  return cudaGetLastError();
}

cudaError_t add_fwd(const void* a, const void* b, void* y, DType t, i64 count, bool relu, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  DISPATCH(t, (add_k<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                                     static_cast<T*>(y), count, relu)));
  return cudaGetLastError();
}

cudaError_t accumulate_t(void* dst, const void* src, DType t, i64 count, float beta, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  DISPATCH(t, (accumulate_k<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                            static_cast<const T*>(src), count, beta)));
  return cudaGetLastError();
}

cudaError_t gap_fwd(const void* x, void* y, DType t, i64 n, i64 c, i64 hw, cudaStream_t stream) {
  const i64 planes = n * c;
  if (planes <= 0) return cudaSuccess;
  DISPATCH(t, (gap_fwd_k<T><<<blocks_for(planes), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                          c, hw, planes)));
  return cudaGetLastError();
}

cudaError_t gap_bwd(const void* dy, void* dx, DType t, i64 n, i64 c, i64 hw, float beta, cudaStream_t stream) {
  const i64 count = n * c * hw;
  if (count <= 0) return cudaSuccess;
  DISPATCH(t, (gap_bwd_k<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx),
                                                                         c, hw, count, beta)));
  return cudaGetLastError();
}

cudaError_t maxpool_fwd(const void* x, void* y, DType t, const PoolGeom& g, cudaStream_t stream) {
  const i64 count = g.n * g.oh * g.ow * g.c;
  if (count <= 0) return cudaSuccess;
  const auto run = [&](auto index) {
    using I = decltype(index);
    DISPATCH(t, (maxpool_fwd_k<T, I><<<blocks_for(count), kThreads, 0, stream>>>(
                    static_cast<const T*>(x), static_cast<T*>(y), PoolGeomI<I>(g), static_cast<I>(count))));
  };
  if (pool_int32(g))
    run(std::int32_t{});
  else
    run(i64{});
  return cudaGetLastError();
}

cudaError_t maxpool_bwd(const void* x, const void* dy, void* dx, DType t, const PoolGeom& g, float beta,
                        cudaStream_t stream) {
  const bool tiled = pool_windows_tile(g.k, g.s, g.p, g.h, g.w, g.oh, g.ow);
  const i64 count = tiled ? g.n * g.oh * g.ow * g.c : g.n * g.h * g.w * g.c;
  if (count <= 0) return cudaSuccess;
  const auto run = [&](auto index) {
    using I = decltype(index);
    if (tiled)
      DISPATCH(t, (maxpool_bwd_tiled_k<T, I><<<blocks_for(count), kThreads, 0, stream>>>(
                      static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), PoolGeomI<I>(g),
                      static_cast<I>(count), beta)))
    else
      DISPATCH(t, (maxpool_bwd_k<T, I><<<blocks_for(count), kThreads, 0, stream>>>(
                      static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), PoolGeomI<I>(g),
                      static_cast<I>(count), beta)))
  };
  if (pool_int32(g))
    run(std::int32_t{});
  else
    run(i64{});
  return cudaGetLastError();
}

std::size_t reduce_scratch_doubles(i64 rows, i64 c) {
  return static_cast<std::size_t>(2 * reduce_blocks(rows) * c);
}

cudaError_t channel_reduce(const ReduceArgs& args, DType t, double* scratch, double* out1, double* out2,
                           cudaStream_t stream) {
  if (args.rows <= 0 || args.c <= 0) return cudaSuccess;
  const i64 blocks = reduce_blocks(args.rows), rpb = rows_per_block(args.rows);
  DISPATCH(t, (reduce_k<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, rpb, scratch)));
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  reduce_finish_k<<<blocks_for(args.c), kThreads, 0, stream>>>(scratch, blocks, args.c, out1, out2);
  return cudaGetLastError();
}

cudaError_t store_sums(const double* src, float* dst, i64 c, cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  store_sums_k<<<blocks_for(c), kThreads, 0, stream>>>(src, dst, c);
  return cudaGetLastError();
}

cudaError_t bn_finish_stats(const double* sum, const double* sumsq, i64 c, i64 m, double eps, double momentum,
                            float* mean_dev, float* inv_dev, float* running_mean, float* running_var,
                            cudaStream_t stream) {
  bn_finish_k<<<blocks_for(c), kThreads, 0, stream>>>(sum, sumsq, c, m, eps, momentum, mean_dev, inv_dev, running_mean,
                                                      running_var);
  return cudaGetLastError();
}

cudaError_t bn_eval_stats(const float* running_mean, const float* running_var, i64 c, double eps, float* mean_dev,
                          float* inv_dev, cudaStream_t stream) {
  bn_eval_k<<<blocks_for(c), kThreads, 0, stream>>>(running_mean, running_var, c, eps, mean_dev, inv_dev);
  return cudaGetLastError();
}

cudaError_t bn_apply(const void* x, void* y, DType t, i64 rows, i64 c, const float* mean, const float* inv,
                     const float* scale, const float* shift, bool relu, cudaStream_t stream) {
  const i64 count = rows * c;
  if (count <= 0) return cudaSuccess;
  DISPATCH(t, (bn_apply_k<T><<<blocks_for(count), kThreads, 0, stream>>>(
                  static_cast<const T*>(x), static_cast<T*>(y), c, count, mean, inv, scale, shift, relu)));
  return cudaGetLastError();
}

cudaError_t bn_backward(const void* x, const void* g, void* dx, DType t, i64 rows, i64 c, const float* mean,
                        const float* inv, const float* scale, const double* sum_g, const double* sum_gx, float* dscale,
                        float* dshift, float beta, cudaStream_t stream) {
  if (dscale && dshift) {
    bn_param_grads_k<<<blocks_for(c), kThreads, 0, stream>>>(sum_g, sum_gx, dscale, dshift, c);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const i64 count = rows * c;
  if (count <= 0 || !dx) return cudaSuccess;
  DISPATCH(t, (bn_bwd_k<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                        static_cast<const T*>(g), static_cast<T*>(dx), c,
                                                                        count, rows, mean, inv, scale, sum_g, sum_gx,
                                                                        beta)));
  return cudaGetLastError();
}

#undef DISPATCH

}  // namespace dlsweep::trainer::kernels::cuda
