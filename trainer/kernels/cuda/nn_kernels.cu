// nn_kernels.cu — the network kernels cuBLASLt and cuDNN do not provide (device_kernels.hpp):
// softmax cross-entropy (reference_math.hpp's, in double), the bias/ReLU backward of a dense
// layer, and the non-finite check of fp16 loss scaling.
#include <climits>
#include <cmath>

#include "trainer/kernels/cuda/device_kernels.hpp"

namespace dlsweep::trainer::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;  // one warp per row
constexpr int kSumThreads = 256;

// The larger of (v, i) and (ov, oi); on equal values the smaller index (first maximum).
__device__ void arg_max_merge(double& v, int& i, double ov, int oi) {
  if (ov > v || (ov == v && oi < i)) {
    v = ov;
    i = oi;
  }
}

__global__ void softmax_xent_rows(const float* logits, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                  const std::int32_t* labels, float grad_scale, float* dlogits, std::int64_t ld_d,
                                  double* row_loss, std::int32_t* row_correct) {
  const std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (r >= rows) return;
  const int lane = threadIdx.x;
  const float* x = logits + r * ld;
  double mx = -INFINITY;
  int arg = INT_MAX;
  for (std::int64_t c = lane; c < cols; c += kWarp) arg_max_merge(mx, arg, static_cast<double>(x[c]), static_cast<int>(c));
  for (int off = kWarp / 2; off > 0; off /= 2) {
    const double ov = __shfl_xor_sync(0xffffffffu, mx, off);
    const int oi = __shfl_xor_sync(0xffffffffu, arg, off);
    arg_max_merge(mx, arg, ov, oi);
  }
  if (arg == INT_MAX) arg = 0;  // no logit compared greater than -inf: the reference's arg 0
  double z = 0;
  for (std::int64_t c = lane; c < cols; c += kWarp) z += exp(static_cast<double>(x[c]) - mx);
  for (int off = kWarp / 2; off > 0; off /= 2) z += __shfl_xor_sync(0xffffffffu, z, off);
  const double lse = mx + log(z);
  const std::int32_t label = labels[r];
  const bool valid = label >= 0 && label < cols;
  if (lane == 0) {
    row_loss[r] = valid ? lse - static_cast<double>(x[label]) : NAN;
    row_correct[r] = valid && arg == label ? 1 : 0;
  }
  if (!dlogits) return;
  float* d = dlogits + r * ld_d;
  for (std::int64_t c = lane; c < cols; c += kWarp) {
    const double p = exp(static_cast<double>(x[c]) - lse);
    d[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * static_cast<double>(grad_scale));
  }
}

// One block: fixed-order tree sums of the per-row results (deterministic).
__global__ void sum_rows(const double* row_loss, const std::int32_t* row_correct, std::int64_t rows, double* total,
                         long long* correct) {
  __shared__ double sl[kSumThreads];
  __shared__ long long sc[kSumThreads];
  double l = 0;
  long long c = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += kSumThreads) {
    l += row_loss[r];
    c += row_correct[r];
  }
  sl[threadIdx.x] = l;
  sc[threadIdx.x] = c;
  __syncthreads();
  for (int s = kSumThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      sl[threadIdx.x] += sl[threadIdx.x + s];
      sc[threadIdx.x] += sc[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    total[0] = sl[0];
    correct[0] = sc[0];
  }
}

// Block (32 columns × 8 row groups): each thread masks and sums every 8th row of its
// column; the 8 partial sums are then added in row-group order.
__global__ void bias_act_backward_kernel(float* dy, const float* y, float* db, std::int64_t rows, std::int64_t cols,
                                         std::int64_t ld, bool relu) {
  __shared__ double part[8][kWarp];
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kWarp + threadIdx.x;
  double s = 0;
  if (j < cols) {
    for (std::int64_t r = threadIdx.y; r < rows; r += 8) {
      float v = dy[r * ld + j];
      if (relu && !(y[r * ld + j] > 0.0f)) {
        v = 0.0f;
        dy[r * ld + j] = v;
      }
      s += v;
    }
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols && db) {
    double t = 0;
    for (int k = 0; k < 8; ++k) t += part[k][threadIdx.x];
    db[j] = static_cast<float>(t);
  }
}

__global__ void find_nonfinite_kernel(const float* data, std::int64_t n, int* found) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    if (!isfinite(data[i])) *found = 1;
}

}  // namespace

cudaError_t softmax_xent(const float* logits_dev, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         const std::int32_t* labels_dev, float grad_scale, float* dlogits_dev, std::int64_t ld_d,
                         double* row_loss_dev, std::int32_t* row_correct_dev, double* totals_dev,
                         long long* counts_dev, cudaStream_t stream) {
  if (rows < 0 || cols < 1 || ld < cols || (dlogits_dev && ld_d < cols)) return cudaErrorInvalidValue;
  if (rows > 0) {
    const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_xent_rows<<<blocks, dim3(kWarp, kRowsPerBlock), 0, stream>>>(
        logits_dev, rows, cols, ld, labels_dev, grad_scale, dlogits_dev, ld_d, row_loss_dev, row_correct_dev);
  }
  sum_rows<<<1, kSumThreads, 0, stream>>>(row_loss_dev, row_correct_dev, rows, totals_dev, counts_dev);
  return cudaGetLastError();
}

cudaError_t bias_act_backward(float* dy_dev, const float* y_dev, float* db_dev, std::int64_t rows, std::int64_t cols,
                              std::int64_t ld, bool relu, cudaStream_t stream) {
  if (rows < 0 || cols < 1 || ld < cols) return cudaErrorInvalidValue;
  const auto blocks = static_cast<unsigned>((cols + kWarp - 1) / kWarp);
  bias_act_backward_kernel<<<blocks, dim3(kWarp, 8), 0, stream>>>(dy_dev, y_dev, db_dev, rows, cols, ld, relu);
  return cudaGetLastError();
}

cudaError_t find_nonfinite(const float* data_dev, std::int64_t n, int* found_dev, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  std::int64_t blocks = (n + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  find_nonfinite_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(data_dev, n, found_dev);
  return cudaGetLastError();
}

}  // namespace dlsweep::trainer::kernels::cuda
