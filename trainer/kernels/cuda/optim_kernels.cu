// optim_kernels.cu — fused multi-tensor optimizer updates (device_kernels.hpp): one launch
// updates every tensor; blockIdx.y picks the tensor, a grid-stride loop over its floats.
// Expressions copy trainer/optim/{sgd,adam,lars}.cpp term by term (compiled with
// --fmad=false, so each operation rounds as on the CPU).
#include <cmath>

#include "trainer/kernels/cuda/device_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocksX = 1024;

dim3 grid_for(std::int64_t max_n, int count) {
  std::int64_t bx = (max_n + kThreads - 1) / kThreads;
  if (bx < 1) bx = 1;
  if (bx > kMaxBlocksX) bx = kMaxBlocksX;
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(count));
}

bool bad_count(int count) { return count < 0 || count > 65535; }

template <bool kNesterov, bool kCorrected>
__global__ void sgd_kernel(const MtTensor* ts, float m) {
  const MtTensor t = ts[blockIdx.y];
  const float lr = static_cast<float>(t.lr);
  const float gs = 1.0f;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float d = gs * (t.g[i] + t.wd * t.w[i]);
    if constexpr (kCorrected) {
      const float vi = m * t.s1[i] + d;
      t.s1[i] = vi;
      if constexpr (kNesterov) t.w[i] -= lr * (d + m * vi);
      else t.w[i] -= lr * vi;
    } else {
      const float ui = m * t.s1[i] + lr * d;
      t.s1[i] = ui;
      if constexpr (kNesterov) t.w[i] -= m * ui + lr * d;
      else t.w[i] -= ui;
    }
  }
}

template <bool kDecoupled>
__global__ void adam_kernel(const MtTensor* ts, float b1, float b2, float eps) {
  const MtTensor t = ts[blockIdx.y];
  const float lr = static_cast<float>(t.lr);
  const float keep = 1.0f - lr * t.wd;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float wi = t.w[i], d = t.g[i];
    if constexpr (kDecoupled) wi = wi * keep;
    else d = d + t.wd * wi;
    const float mi = b1 * t.s1[i] + (1.0f - b1) * d;
    const float vi = b2 * t.s2[i] + (1.0f - b2) * (d * d);
    t.s1[i] = mi;
    t.s2[i] = vi;
    t.w[i] = wi - lr * (mi * t.c1) / (sqrtf(vi * t.c2) + eps);
  }
}

// LARS pass 1: per (tensor, block) partial Σw², Σg², tree-reduced in shared memory.
__global__ void lars_norms_kernel(const MtTensor* ts, double* partials) {
  const MtTensor t = ts[blockIdx.y];
  __shared__ double sw[kThreads], sg[kThreads];
  double aw = 0, ag = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(lars_blocks_per_tensor) * kThreads) {
    const double w = t.w[i], g = t.g[i];
    aw += w * w;
    ag += g * g;
  }
  sw[threadIdx.x] = aw;
  sg[threadIdx.x] = ag;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      sw[threadIdx.x] += sw[threadIdx.x + s];
      sg[threadIdx.x] += sg[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double* p = partials + 2 * (static_cast<std::int64_t>(blockIdx.y) * lars_blocks_per_tensor + blockIdx.x);
    p[0] = sw[0];
    p[1] = sg[0];
  }
}

// LARS pass 2: one thread per tensor sums its partials in block order; rate = lr·local.
__global__ void lars_rates_kernel(const MtTensor* ts, int count, const double* partials, double trust, double eps,
                                  float* rates) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const MtTensor& t = ts[k];
  double local = 1.0;
  if (t.trust) {
    double w2 = 0, g2 = 0;
    const double* p = partials + 2 * static_cast<std::int64_t>(k) * lars_blocks_per_tensor;
    for (int b = 0; b < lars_blocks_per_tensor; ++b) {
      w2 += p[2 * b];
      g2 += p[2 * b + 1];
    }
    const double wn = sqrt(w2), gn = sqrt(g2);
    if (wn != 0.0 && gn != 0.0) local = trust * wn / (gn + static_cast<double>(t.wd) * wn + eps);
  }
  rates[k] = static_cast<float>(t.lr * local);
}

template <bool kNesterov>
__global__ void lars_update_kernel(const MtTensor* ts, const float* rates, float m) {
  const MtTensor t = ts[blockIdx.y];
  const float rate = rates[blockIdx.y];
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float step = rate * (t.g[i] + t.wd * t.w[i]);
    const float vi = t.m_eff * t.s1[i] + step;
    t.s1[i] = vi;
    if constexpr (kNesterov) t.w[i] -= m * vi + step;
    else t.w[i] -= vi;
  }
}

// LARC pass 2 (larc.cpp's scale()): one thread per tensor; out[2k] = the gradient scale a,
// out[2k+1] = the weight decay used (0 where a norm is 0: apex takes the gradient as is).
__global__ void larc_rates_kernel(const MtTensor* ts, int count, const double* partials, double trust, double eps,
                                  bool clip, float* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  const MtTensor& t = ts[k];
  double w2 = 0, g2 = 0;
  const double* p = partials + 2 * static_cast<std::int64_t>(k) * lars_blocks_per_tensor;
  for (int b = 0; b < lars_blocks_per_tensor; ++b) {
    w2 += p[2 * b];
    g2 += p[2 * b + 1];
  }
  const double wn = sqrt(w2), gn = sqrt(g2);
  if (wn == 0.0 || gn == 0.0) {
    out[2 * k] = 1.0f;
    out[2 * k + 1] = 0.0f;
    return;
  }
  double a = trust * wn / (gn + static_cast<double>(t.wd) * wn + eps);
  if (clip) a = fmin(a / t.lr, 1.0);  // lr = 0 gives +inf, clipped to 1
  out[2 * k] = static_cast<float>(a);
  out[2 * k + 1] = t.wd;
}

// LARC pass 3: sgd.cpp's momentum slice with the gradient scale and weight decay of pass 2.
template <bool kNesterov, bool kCorrected>
__global__ void larc_update_kernel(const MtTensor* ts, const float* scale_wd, float m) {
  const MtTensor t = ts[blockIdx.y];
  const float lr = static_cast<float>(t.lr);
  const float gs = scale_wd[2 * blockIdx.y], wd = scale_wd[2 * blockIdx.y + 1];
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float d = gs * (t.g[i] + wd * t.w[i]);
    if constexpr (kCorrected) {
      const float vi = m * t.s1[i] + d;
      t.s1[i] = vi;
      if constexpr (kNesterov) t.w[i] -= lr * (d + m * vi);
      else t.w[i] -= lr * vi;
    } else {
      const float ui = m * t.s1[i] + lr * d;
      t.s1[i] = ui;
      if constexpr (kNesterov) t.w[i] -= m * ui + lr * d;
      else t.w[i] -= ui;
    }
  }
}

// LAMB (lamb.cpp): r = m̂/(sqrt(v̂) + eps) + wd·w, as the CPU's float expression.
__device__ float lamb_r(float m, float v, float w, float c1, float c2, float eps, float wd) {
  return (m * c1) / (sqrtf(v * c2) + eps) + wd * w;
}

// LAMB pass 1: the moments.
__global__ void lamb_moments_kernel(const MtTensor* ts, float b1, float b2) {
  const MtTensor t = ts[blockIdx.y];
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = t.g[i];
    t.s1[i] = b1 * t.s1[i] + (1.0f - b1) * g;
    t.s2[i] = b2 * t.s2[i] + (1.0f - b2) * (g * g);
  }
}

// LAMB pass 2: per (tensor, block) partial Σw², Σr².
__global__ void lamb_norms_kernel(const MtTensor* ts, float eps, double* partials) {
  const MtTensor t = ts[blockIdx.y];
  __shared__ double sw[kThreads], sr[kThreads];
  double aw = 0, ar = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(lars_blocks_per_tensor) * kThreads) {
    const double w = t.w[i];
    const double r = lamb_r(t.s1[i], t.s2[i], t.w[i], t.c1, t.c2, eps, t.wd);
    aw += w * w;
    ar += r * r;
  }
  sw[threadIdx.x] = aw;
  sr[threadIdx.x] = ar;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      sw[threadIdx.x] += sw[threadIdx.x + s];
      sr[threadIdx.x] += sr[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double* p = partials + 2 * (static_cast<std::int64_t>(blockIdx.y) * lars_blocks_per_tensor + blockIdx.x);
    p[0] = sw[0];
    p[1] = sr[0];
  }
}

// LAMB pass 3: rate = lr · ‖w‖/‖r‖ (1 where a norm is 0).
__global__ void lamb_rates_kernel(const MtTensor* ts, int count, const double* partials, float* rates) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= count) return;
  double w2 = 0, r2 = 0;
  const double* p = partials + 2 * static_cast<std::int64_t>(k) * lars_blocks_per_tensor;
  for (int b = 0; b < lars_blocks_per_tensor; ++b) {
    w2 += p[2 * b];
    r2 += p[2 * b + 1];
  }
  const double wn = sqrt(w2), rn = sqrt(r2);
  const double ratio = (wn == 0.0 || rn == 0.0) ? 1.0 : wn / rn;
  rates[k] = static_cast<float>(ts[k].lr * ratio);
}

// LAMB pass 4: w -= rate · r.
__global__ void lamb_apply_kernel(const MtTensor* ts, const float* rates, float eps) {
  const MtTensor t = ts[blockIdx.y];
  const float rate = rates[blockIdx.y];
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < t.n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    t.w[i] -= rate * lamb_r(t.s1[i], t.s2[i], t.w[i], t.c1, t.c2, eps, t.wd);
}

}  // namespace

cudaError_t sgd_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float momentum, bool nesterov,
                      bool corrected, cudaStream_t stream) {
  if (bad_count(count)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const dim3 grid = grid_for(max_n, count);
  if (corrected) {
    if (nesterov) sgd_kernel<true, true><<<grid, kThreads, 0, stream>>>(tensors_dev, momentum);
    else sgd_kernel<false, true><<<grid, kThreads, 0, stream>>>(tensors_dev, momentum);
  } else {
    if (nesterov) sgd_kernel<true, false><<<grid, kThreads, 0, stream>>>(tensors_dev, momentum);
    else sgd_kernel<false, false><<<grid, kThreads, 0, stream>>>(tensors_dev, momentum);
  }
  return cudaGetLastError();
}

cudaError_t adam_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float beta1, float beta2, float eps,
                       bool decoupled, cudaStream_t stream) {
  if (bad_count(count)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const dim3 grid = grid_for(max_n, count);
  if (decoupled) adam_kernel<true><<<grid, kThreads, 0, stream>>>(tensors_dev, beta1, beta2, eps);
  else adam_kernel<false><<<grid, kThreads, 0, stream>>>(tensors_dev, beta1, beta2, eps);
  return cudaGetLastError();
}

cudaError_t lars_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float momentum, double trust,
                       double eps, bool nesterov, double* partials_dev, float* rates_dev, cudaStream_t stream) {
  if (bad_count(count)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  lars_norms_kernel<<<dim3(lars_blocks_per_tensor, count), kThreads, 0, stream>>>(tensors_dev, partials_dev);
  lars_rates_kernel<<<(count + 127) / 128, 128, 0, stream>>>(tensors_dev, count, partials_dev, trust, eps, rates_dev);
  const dim3 grid = grid_for(max_n, count);
  if (nesterov) lars_update_kernel<true><<<grid, kThreads, 0, stream>>>(tensors_dev, rates_dev, momentum);
  else lars_update_kernel<false><<<grid, kThreads, 0, stream>>>(tensors_dev, rates_dev, momentum);
  return cudaGetLastError();
}

}  // namespace dlsweep::trainer::kernels::cuda

namespace dlsweep::trainer::kernels::cuda {

cudaError_t larc_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float momentum, double trust,
                       double eps, bool clip, bool nesterov, bool corrected, double* partials_dev, float* scale_wd_dev,
                       cudaStream_t stream) {
  if (bad_count(count)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  lars_norms_kernel<<<dim3(lars_blocks_per_tensor, count), kThreads, 0, stream>>>(tensors_dev, partials_dev);
  larc_rates_kernel<<<(count + 127) / 128, 128, 0, stream>>>(tensors_dev, count, partials_dev, trust, eps, clip,
                                                              scale_wd_dev);
  const dim3 grid = grid_for(max_n, count);
  if (corrected) {
    if (nesterov) larc_update_kernel<true, true><<<grid, kThreads, 0, stream>>>(tensors_dev, scale_wd_dev, momentum);
    else larc_update_kernel<false, true><<<grid, kThreads, 0, stream>>>(tensors_dev, scale_wd_dev, momentum);
  } else {
    if (nesterov) larc_update_kernel<true, false><<<grid, kThreads, 0, stream>>>(tensors_dev, scale_wd_dev, momentum);
    else larc_update_kernel<false, false><<<grid, kThreads, 0, stream>>>(tensors_dev, scale_wd_dev, momentum);
  }
  return cudaGetLastError();
}

cudaError_t lamb_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float beta1, float beta2, float eps,
                       double* partials_dev, float* rates_dev, cudaStream_t stream) {
  if (bad_count(count)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const dim3 grid = grid_for(max_n, count);
  lamb_moments_kernel<<<grid, kThreads, 0, stream>>>(tensors_dev, beta1, beta2);
  lamb_norms_kernel<<<dim3(lars_blocks_per_tensor, count), kThreads, 0, stream>>>(tensors_dev, eps, partials_dev);
  lamb_rates_kernel<<<(count + 127) / 128, 128, 0, stream>>>(tensors_dev, count, partials_dev, rates_dev);
  lamb_apply_kernel<<<grid, kThreads, 0, stream>>>(tensors_dev, rates_dev, eps);
  return cudaGetLastError();
}

}  // namespace dlsweep::trainer::kernels::cuda
