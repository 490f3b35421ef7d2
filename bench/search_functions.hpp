// search_functions.hpp — the synthetic objectives of the search benchmarks (minimised),
// identical to bench/optuna_quality.py's. Each has its space, its noiseless optimum, and
// a value that may carry noise.
//
//  schedule: a large-batch schedule sweep. base_lr log-uniform [1e-4, 10], batch_size
//    int log [256, 65536], warmup_epochs uniform [0, 10], lr_rule in {linear, sqrt}.
//    The best lr grows with the batch (sqrt rule: 0.1·sqrt(bs/256), linear: 0.1·bs/256,
//    depending on the rule chosen), large batches need more warmup, and very large ones
//    lose a little accuracy; Gaussian noise (sd 0.02) on every evaluation.
//  branin: Branin–Hoo on [-5, 10] x [0, 15], minimum 0.397887.
//  hartmann6: Hartmann 6-D on [0, 1]^6, minimum −3.322368.
#pragma once

#include <array>
#include <cmath>
#include <string>

#include "search/search_space.hpp"

namespace bench {

using dlsweep::search::Dimension;
using dlsweep::search::Params;
using dlsweep::search::Space;

inline Dimension real(std::string name, double lo, double hi, bool log = false) {
  Dimension d;
  d.name = std::move(name);
  d.kind = log ? Dimension::Kind::log_uniform : Dimension::Kind::uniform;
  d.low = lo;
  d.high = hi;
  return d;
}

inline Space schedule_space() {
  Space s;
  Dimension bs;
  bs.name = "batch_size";
  bs.kind = Dimension::Kind::int_range;
  bs.int_low = 256;
  bs.int_high = 65536;
  bs.log = true;
  Dimension rule;
  rule.name = "lr_rule";
  rule.kind = Dimension::Kind::choice;
  rule.choices = {"linear", "sqrt"};
  s.dims = {real("base_lr", 1e-4, 10, true), bs, real("warmup_epochs", 0, 10), rule};
  return s;
}

/// Noiseless schedule loss (its minimum is 0.0 at batch 256 with the right lr; larger
/// batches cost 0.02 per doubling).
inline double schedule(const Params& p) {
  const double lr = p["base_lr"].get<double>(), bs = p["batch_size"].get<double>();
  const double w = p["warmup_epochs"].get<double>();
  const bool sq = p["lr_rule"] == "sqrt";
  const double k = bs / 256.0;
  // The lr the user scales: effective lr = base_lr · rule(k); the best effective lr is
  // 0.1·sqrt(k) (the sqrt rule is right, the linear one overshoots for large batches).
  const double eff = lr * (sq ? std::sqrt(k) : k);
  const double best_eff = 0.1 * std::sqrt(k);
  const double lr_term = std::pow(std::log10(eff / best_eff), 2);
  const double need_warmup = 1.5 * std::log2(k) / 8.0 * 5.0;  // 0 .. 7.5 epochs
  const double warm_term = 0.01 * std::pow(std::max(0.0, need_warmup - w), 2) + 0.002 * w;
  return lr_term + warm_term + 0.02 * std::log2(k);
}

inline Space branin_space() {
  Space s;
  s.dims = {real("x1", -5, 10), real("x2", 0, 15)};
  return s;
}

inline double branin(const Params& p) {
  const double x1 = p["x1"].get<double>(), x2 = p["x2"].get<double>();
  const double pi = 3.14159265358979323846;
  const double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
  return std::pow(x2 - b * x1 * x1 + c * x1 - 6, 2) + 10 * (1 - t) * std::cos(x1) + 10;
}

inline const std::array<std::string, 6> kHartmannNames = {"x0", "x1", "x2", "x3", "x4", "x5"};

inline Space hartmann_space() {
  Space s;
  for (int i = 0; i < 6; ++i) s.dims.push_back(real(kHartmannNames[i], 0, 1));
  return s;
}

inline double hartmann6(const Params& p) {
  static constexpr std::array<double, 4> alpha = {1.0, 1.2, 3.0, 3.2};
  static constexpr double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14},
                                     {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}};
  static constexpr double P[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                     {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                     {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                     {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    double inner = 0;
    for (int j = 0; j < 6; ++j) inner += A[i][j] * std::pow(p[kHartmannNames[j]].get<double>() - P[i][j], 2);
    sum += alpha[i] * std::exp(-inner);
  }
  return -sum;
}

}  // namespace bench
