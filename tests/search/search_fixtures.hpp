// search_fixtures.hpp — spaces, objectives and histories shared by the search tests.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "search/history.hpp"
#include "search/search_space.hpp"

namespace fixtures {

using namespace dlsweep::search;

inline Dimension dim_log(std::string name, double lo, double hi) {
  Dimension d;
  d.name = std::move(name);
  d.kind = Dimension::Kind::log_uniform;
  d.low = lo;
  d.high = hi;
  return d;
}
inline Dimension dim_uniform(std::string name, double lo, double hi) {
  Dimension d = dim_log(std::move(name), lo, hi);
  d.kind = Dimension::Kind::uniform;
  return d;
}
inline Dimension dim_int(std::string name, std::int64_t lo, std::int64_t hi, std::int64_t step = 1, bool log = false) {
  Dimension d;
  d.name = std::move(name);
  d.kind = Dimension::Kind::int_range;
  d.int_low = lo;
  d.int_high = hi;
  d.int_step = step;
  d.log = log;
  return d;
}
inline Dimension dim_choice(std::string name, std::vector<nlohmann::json> values) {
  Dimension d;
  d.name = std::move(name);
  d.kind = Dimension::Kind::choice;
  d.choices = std::move(values);
  return d;
}

/// Every kind of dimension, a conditional one, and a fixed param.
inline Space mixed_space() {
  Space s;
  s.dims = {dim_log("lr", 1e-4, 1.0), dim_uniform("momentum", 0.8, 0.99), dim_int("batch_size", 64, 1024, 64),
            dim_int("warmup_epochs", 1, 100, 1, true), dim_choice("optimizer", {"sgd", "lars", "adam"})};
  Dimension trust = dim_log("trust", 1e-4, 1e-2);
  trust.when = {{"optimizer", {"lars"}}};
  s.dims.push_back(trust);
  s.fixed = {{"epochs", 5}};
  return s;
}

/// Finite dimensions only (grid), with a conditional one.
inline Space finite_space() {
  Space s;
  s.dims = {dim_choice("optimizer", {"sgd", "lars"}), dim_int("batch_size", 64, 256, 64)};
  Dimension trust = dim_choice("trust", {0.001, 0.01});
  trust.when = {{"optimizer", {"lars"}}};
  s.dims.push_back(trust);
  return s;
}

/// A smooth objective over mixed_space (maximised): best at lr 1e-2, batch 512, adam.
inline double objective(const Params& p) {
  double v = -std::pow(std::log10(p["lr"].get<double>()) + 2.0, 2);
  v -= std::pow((p["batch_size"].get<double>() - 512.0) / 512.0, 2);
  v -= p["optimizer"] == "adam" ? 0.0 : 0.3;
  v -= 0.01 * std::abs(std::log(p["warmup_epochs"].get<double>() / 10.0));
  return v;
}

inline TrialRecord complete(std::int64_t n, Params p, double value) {
  TrialRecord t;
  t.number = n;
  t.params = std::move(p);
  t.status = TrialStatus::complete;
  t.value = value;
  return t;
}

/// A curve of `n` points on epochs 1..n with the values given.
inline std::vector<CurvePoint> curve(const std::vector<double>& values, double steps_per_epoch = 100,
                                     double wall_per_epoch = 10) {
  std::vector<CurvePoint> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double e = double(i + 1);
    out.push_back({e * steps_per_epoch, e, e * steps_per_epoch * 32, e * wall_per_epoch, values[i]});
  }
  return out;
}

}  // namespace fixtures
