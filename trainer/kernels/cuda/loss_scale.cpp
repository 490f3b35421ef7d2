#include "trainer/kernels/cuda/loss_scale.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::trainer::kernels::cuda {

Status validate(const LossScaleOptions& o) {
  auto bad = [](std::string_view field, double v, std::string_view rule) {
    return fail_as(ErrorKind::bad_input, fmt::format("loss scaling {} = {:g} is invalid", field, v),
                   fmt::format("loss_scale.{}", field), fmt::format("use {}", rule));
  };
  for (double v : {o.init_scale, o.growth_factor, o.backoff_factor, o.min_scale, o.max_scale})
    if (!std::isfinite(v)) return bad("value", v, "finite numbers");
  if (!(o.growth_factor > 1)) return bad("growth_factor", o.growth_factor, "a factor > 1");
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) return bad("backoff_factor", o.backoff_factor, "0 < factor < 1");
  if (o.growth_interval < 1) return bad("growth_interval", static_cast<double>(o.growth_interval), "an interval >= 1");
  if (!(o.min_scale > 0)) return bad("min_scale", o.min_scale, "a scale > 0");
  if (!(o.init_scale >= o.min_scale && o.init_scale <= o.max_scale))
    return bad("init_scale", o.init_scale, fmt::format("a scale in [min_scale {:g}, max_scale {:g}]", o.min_scale, o.max_scale));
  return {};
}

LossScaler::LossScaler(const LossScaleOptions& o) : o_(o), scale_(o.init_scale) {}

bool LossScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ = std::max(scale_ * o_.backoff_factor, o_.min_scale);
    good_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_ >= o_.growth_interval) {
    scale_ = std::min(scale_ * o_.growth_factor, o_.max_scale);
    good_ = 0;
  }
  return true;
}

void LossScaler::restore(double scale, std::int64_t good) {
  scale_ = std::clamp(scale, o_.min_scale, o_.max_scale);
  good_ = std::clamp<std::int64_t>(good, 0, o_.growth_interval - 1);
}

}  // namespace dlsweep::trainer::kernels::cuda
