#include "trainer/noise_scale.hpp"

#include <cmath>

namespace dlsweep::trainer {

void NoiseScaleEstimator::add(double g_small_sq, double b_small, double g_big_sq, double b_big) {
  if (!(b_small > 0 && b_big > b_small) || !std::isfinite(g_small_sq) || !std::isfinite(g_big_sq)) return;
  const double g2 = (b_big * g_big_sq - b_small * g_small_sq) / (b_big - b_small);
  const double trace = (g_small_sq - g_big_sq) / (1.0 / b_small - 1.0 / b_big);
  g2_ = ema_ * g2_ + (1 - ema_) * g2;
  trace_ = ema_ * trace_ + (1 - ema_) * trace;
  ++count_;
}

double NoiseScaleEstimator::correction() const { return 1.0 - std::pow(ema_, static_cast<double>(count_)); }

std::optional<double> NoiseScaleEstimator::grad_norm_sq() const {
  if (count_ == 0) return std::nullopt;
  return g2_ / correction();
}

std::optional<double> NoiseScaleEstimator::trace_sigma() const {
  if (count_ == 0) return std::nullopt;
  return trace_ / correction();
}

std::optional<double> NoiseScaleEstimator::noise_scale() const {
  if (count_ == 0 || !(g2_ > 0)) return std::nullopt;
  return trace_ / g2_;  // the bias corrections cancel
}

}  // namespace dlsweep::trainer
