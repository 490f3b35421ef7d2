// value_map.cpp — value_from_unit.
#include "search/value_map.hpp"

#include <algorithm>
#include <cmath>

namespace dlsweep::search {

namespace {

double clamp_half_open(double v, double low, double high) {
  if (!(v >= low)) return low;
  if (v >= high) return std::nextafter(high, low);
  return v;
}

}  // namespace

nlohmann::json value_from_unit(const Dimension& d, double u) {
  u = std::clamp(u, 0.0, std::nextafter(1.0, 0.0));
  switch (d.kind) {
    case Dimension::Kind::choice: {
      const auto k = d.choices.size();
      return d.choices[std::min(k - 1, static_cast<std::size_t>(u * double(k)))];
    }
    case Dimension::Kind::uniform:
      return clamp_half_open(d.low + u * (d.high - d.low), d.low, d.high);
    case Dimension::Kind::log_uniform: {
      const double ll = std::log(d.low), lh = std::log(d.high);
      return clamp_half_open(std::exp(ll + u * (lh - ll)), d.low, d.high);
    }
    case Dimension::Kind::int_range: {
      const std::int64_t step = d.int_step > 0 ? d.int_step : 1;
      const auto n = d.cardinality();
      if (!d.log) {
        const auto idx = std::min<std::int64_t>(n - 1, static_cast<std::int64_t>(u * double(n)));
        return d.int_low + idx * step;
      }
      const double last = double(d.int_low) + double(n - 1) * double(step);
      double a = double(d.int_low) - 0.5 * double(step);
      if (a <= 0) a = double(d.int_low);
      const double b = last + 0.5 * double(step);
      const double x = std::exp(std::log(a) + u * (std::log(b) - std::log(a)));
      const double k = std::floor((x - double(d.int_low)) / double(step) + 0.5);
      return d.int_low + static_cast<std::int64_t>(std::clamp(k, 0.0, double(n - 1))) * step;
    }
  }
  return nullptr;
}

}  // namespace dlsweep::search
