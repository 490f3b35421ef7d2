// loss_scale.hpp — fp16's dynamic loss scaling, as pure code (no CUDA): the GPU path takes
// these settings, tests check them on the CPU. The formats themselves: kernels/precision.hpp.
//
// Dynamic loss scaling (Micikevicius et al. 2018; PyTorch GradScaler's update rule): the loss
// is multiplied by `scale` before backward, gradients divided by it before the optimizer.
// After each backward, with found_inf = "some gradient is inf or NaN":
//     found_inf:  skip the optimizer step; scale = max(scale·backoff, min_scale); good = 0
//     otherwise:  apply the step; good += 1; if good == interval: scale = min(scale·growth, max_scale); good = 0
// Defaults (GradScaler): init 65536, growth 2, backoff 0.5, interval 2000; min 1, max 2^24.
#pragma once

#include <cstdint>

#include "common/result.hpp"

namespace dlsweep::trainer::kernels::cuda {

struct LossScaleOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24
};

/// Errors name the field: growth_factor > 1, 0 < backoff_factor < 1, growth_interval ≥ 1,
/// 0 < min_scale ≤ init_scale ≤ max_scale, all finite.
Status validate(const LossScaleOptions& o);

class LossScaler {
 public:
  /// Precondition: validate(o) passed.
  explicit LossScaler(const LossScaleOptions& o = {});
  double scale() const { return scale_; }
  /// 1/scale, what gradients are multiplied by before the optimizer.
  double inverse_scale() const { return 1.0 / scale_; }
  /// Applies the rule above; returns true when the optimizer step should be applied.
  bool update(bool found_inf);
  std::int64_t skipped_steps() const { return skipped_; }
  std::int64_t good_steps() const { return good_; }
  /// For checkpoints: the scale and the count of good steps since the last change.
  void restore(double scale, std::int64_t good);

 private:
  LossScaleOptions o_;
  double scale_;
  std::int64_t good_ = 0, skipped_ = 0;
};

}  // namespace dlsweep::trainer::kernels::cuda
