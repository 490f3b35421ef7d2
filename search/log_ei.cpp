// log_ei.cpp — LogEI's three regimes and log Φ by erfcx in the lower tail.
#include "search/log_ei.hpp"

#include <cmath>
#include <limits>
#include <numbers>

namespace dlsweep::search::gp {

namespace {

const double kHalfLog2Pi = 0.5 * std::log(2 * std::numbers::pi);
const double kHalfLogPiOver2 = 0.5 * std::log(std::numbers::pi / 2);

// log(1 − e^x) for x < 0 (Mächler 2012).
double log1mexp(double x) { return x > -std::numbers::ln2 ? std::log(-std::expm1(x)) : std::log1p(-std::exp(x)); }

}  // namespace

double erfcx(double x) {
  if (x < 25.0) return std::exp(x * x) * std::erfc(x);
  // The asymptotic series: 1/(x√π) · (1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶)).
  const double r = 1.0 / (x * x);
  return (1.0 - 0.5 * r + 0.75 * r * r - 1.875 * r * r * r) / (x * std::sqrt(std::numbers::pi));
}

double log_h(double z) {
  if (z > -1.0) {
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-z / std::numbers::sqrt2);
    return std::log(pdf + z * cdf);
  }
  const double inv_sqrt_eps = 1.0 / std::sqrt(std::numeric_limits<double>::epsilon());
  if (z > -inv_sqrt_eps)
    return -0.5 * z * z - kHalfLog2Pi + log1mexp(std::log(erfcx(-z / std::numbers::sqrt2) * std::abs(z)) + kHalfLogPiOver2);
  return -0.5 * z * z - kHalfLog2Pi - 2.0 * std::log(std::abs(z));
}

double log_ei(double mean, double var, double best) {
  const double sigma = std::sqrt(std::max(var, 1e-300));
  return log_h((best - mean) / sigma) + std::log(sigma);
}

double log_ndtr(double z) {
  if (z > -5.0) return std::log(0.5 * std::erfc(-z / std::numbers::sqrt2));
  // Φ(z) = ½ erfc(−z/√2) = ½ erfcx(−z/√2) e^{−z²/2}
  return std::log(0.5 * erfcx(-z / std::numbers::sqrt2)) - 0.5 * z * z;
}

double log_pof(double mean, double var, double threshold) {
  return log_ndtr((threshold - mean) / std::sqrt(std::max(var, 1e-300)));
}

}  // namespace dlsweep::search::gp
