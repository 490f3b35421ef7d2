#include "trainer/gpu/precision.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::trainer::gpu {

Result<Precision> parse_precision(std::string_view s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "tf32") return Precision::tf32;
  if (s == "bf16") return Precision::bf16;
  if (s == "fp16") return Precision::fp16;
  return fail_as(ErrorKind::bad_input, fmt::format("unknown precision '{}'", s), "precision",
                 "use fp32, tf32, bf16 or fp16");
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

bool uses_master_weights(Precision p) { return p == Precision::bf16 || p == Precision::fp16; }
bool uses_loss_scaling(Precision p) { return p == Precision::fp16; }

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

}  // namespace dlsweep::trainer::gpu
