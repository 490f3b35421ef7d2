// noise.hpp — the gradient noise scale B_simple = tr(Sigma)/|G|^2 the trainer reports
// (metric grad_noise_scale, a ratio of moving averages; trainer/noise_scale.hpp), read back
// per trial over training and at the point the trial reached the target, and compared with
// the fitted B_crit (docs/math.md#noise-scale-at-target). McCandlish et al.: B_simple grows as
// the loss falls, so it is compared where the target is reached.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/study_data.hpp"

namespace dlsweep::analysis {

struct NoisePoint {
  std::int64_t step = 0;
  std::int64_t samples = 0;
  double b_simple = 0;
};

struct TrialNoise {
  std::int64_t trial = 0;         ///< trial number
  std::int64_t batch = 0;
  std::vector<NoisePoint> series; ///< every evaluation record that carries grad_noise_scale
  /// B_simple at the first record that reached the target (the record itself, or the
  /// latest earlier one carrying the metric); nullopt when not reached or not measured.
  std::optional<double> at_target;
};

/// One entry per trial (any state) whose curve carries grad_noise_scale.
std::vector<TrialNoise> noise_scales(const StudyData& study);

struct NoiseSummary {
  std::size_t trials = 0;                 ///< COMPLETE trials with a value at target
  std::optional<double> median_at_target; ///< median over them
  std::optional<double> lo, hi;           ///< min and max over them
  std::optional<double> ratio_to_b_crit;  ///< median_at_target / b_crit
};

/// Over the COMPLETE trials of `study` (trial numbers matched through `noise`).
NoiseSummary summarize_noise(const StudyData& study, const std::vector<TrialNoise>& noise,
                             std::optional<double> b_crit);

}  // namespace dlsweep::analysis
