// device_kernels.hpp — launchers of dlsweep's own CUDA kernels (optim_kernels.cu,
// nn_kernels.cu). Plain C++17 with device pointers and a stream, so that nvcc (C++17) and
// the C++23 host code both include it. Every launcher is asynchronous on `stream`, allocates
// nothing, never synchronises the host, and returns the launch's cudaError_t.
//
// Math: the CPU path's, element by element (trainer/optim/*.cpp, reference_math.hpp). The
// .cu files are compiled with --fmad=false, so the element-wise float expressions round as
// the CPU's do (no FMA contraction): SGD and Adam/AdamW give bit-identical results to the CPU
// optimizers; LARS's norms are summed in double in a different order (relative error ~1e-15
// in the norm before its rounding to float).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace dlsweep::trainer::kernels::cuda {

/// One tensor of a multi-tensor optimizer launch. Pointers are device pointers into the
/// parameter, gradient and state arenas; every field is per tensor so that one launch covers
/// tensors with different weight decay, update counts and previous LRs.
struct MtTensor {
  float* w = nullptr;        ///< values
  const float* g = nullptr;  ///< gradient (already averaged over the global batch)
  float* s1 = nullptr;       ///< SGD/LARS velocity, Adam m
  float* s2 = nullptr;       ///< Adam v (unused otherwise)
  std::int64_t n = 0;        ///< floats (the tensor's padded span; padding is zero)
  float wd = 0;              ///< weight decay of this tensor
  double lr = 0;             ///< the LR (SGD/Adam round it to float as the CPU does; LARS multiplies the trust ratio in double)
  float m_eff = 0;           ///< LARS: momentum × (lr / prev_lr) under momentum correction, else momentum
  float c1 = 1, c2 = 1;      ///< Adam: 1/(1−β1^t), 1/(1−β2^t) of this tensor's update number t
  int trust = 0;             ///< LARS: 1 = apply the trust ratio, 0 = plain momentum (excluded biases)
};

/// SGD with momentum, all tensors in one launch (sgd.hpp's two forms; g_scale 1).
cudaError_t sgd_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float momentum, bool nesterov,
                      bool corrected, cudaStream_t stream);
/// Adam (decoupled = false) or AdamW, all tensors in one launch (adam.hpp).
cudaError_t adam_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float beta1, float beta2, float eps,
                       bool decoupled, cudaStream_t stream);

/// Scratch of lars_multi: `lars_blocks_per_tensor` × count pairs of doubles.
inline constexpr int lars_blocks_per_tensor = 64;
/// LARS (lars.hpp), norms on the device: per-tensor ‖w‖², ‖g‖² into `partials_dev`
/// (2 × lars_blocks_per_tensor × count doubles), summed in a fixed order (deterministic),
/// the trust ratio applied, then the update. `tensors_dev` is not modified.
cudaError_t lars_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float momentum, double trust,
                       double eps, bool nesterov, double* partials_dev, float* rates_dev, cudaStream_t stream);

/// LARC (larc.hpp), norms on the device as lars_multi's: the per-tensor gradient scale a
/// (trust ratio, clipped at 1 relative to the LR when `clip`) and the weight decay it keeps
/// into `scale_wd_dev` (2 × count floats), then the SGD momentum update of sgd_multi with
/// the gradient scaled by a. `partials_dev` as lars_multi's.
cudaError_t larc_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float momentum, double trust,
                       double eps, bool clip, bool nesterov, bool corrected, double* partials_dev, float* scale_wd_dev,
                       cudaStream_t stream);
/// LAMB (lamb.hpp): moments (s1 = m, s2 = v), then per tensor ‖w‖ and ‖r‖ (r = m̂/(√v̂ + eps)
/// + wd·w) in double summed in a fixed order, then w -= lr·‖w‖/‖r‖·r. `partials_dev` as
/// lars_multi's; `rates_dev` count floats.
cudaError_t lamb_multi(const MtTensor* tensors_dev, int count, std::int64_t max_n, float beta1, float beta2, float eps,
                       double* partials_dev, float* rates_dev, cudaStream_t stream);

/// Softmax cross-entropy (reference_math.hpp's, in double): per row r of logits [rows, cols]
/// (row stride ld), row_loss_dev[r] = lse − logit[label], row_correct_dev[r] = argmax (first
/// maximum) == label; when dlogits_dev is not null, dlogits = (p − onehot)·grad_scale
/// (stride ld_d). Then totals_dev[0] = Σ row_loss in row order, counts_dev[0] = Σ correct.
cudaError_t softmax_xent(const float* logits_dev, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                         const std::int32_t* labels_dev, float grad_scale, float* dlogits_dev, std::int64_t ld_d,
                         double* row_loss_dev, std::int32_t* row_correct_dev, double* totals_dev,
                         long long* counts_dev, cudaStream_t stream);

/// Backward of a dense layer's epilogue: dz = dy ⊙ relu'(y) in place (when relu), and
/// db[j] = Σ_r dz[r, j] (when db_dev is not null) summed in double in a fixed order (rows in
/// chunks of 256 and 8 lanes, then the chunks in 8 lanes; deterministic, it differs from a
/// plain row-order sum by rounding only). [rows, cols], stride ld. `scratch_dev` holds
/// bias_grad_scratch_bytes(rows, cols) bytes (needed when db_dev is not null).
std::size_t bias_grad_scratch_bytes(std::int64_t rows, std::int64_t cols);
cudaError_t bias_act_backward(float* dy_dev, const float* y_dev, float* db_dev, std::int64_t rows, std::int64_t cols,
                              std::int64_t ld, bool relu, double* scratch_dev, cudaStream_t stream);

/// found_dev[0] = 1 if any of the n floats is inf or NaN (left unchanged otherwise; zero it
/// first): fp16 loss scaling's check (loss_scale.hpp), one pass over the gradient arena.
cudaError_t find_nonfinite(const float* data_dev, std::int64_t n, int* found_dev, cudaStream_t stream);

}  // namespace dlsweep::trainer::kernels::cuda
