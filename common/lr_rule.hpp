// lr_rule.hpp — dlsweep-train's `lr_rule` as arithmetic, for whoever must say what LR a batch
// trains at without the trainer (`best` of a branching study: the LR of each stage of the
// schedule it derives) and for the trainer itself (trainer/schedule/lr_schedule.hpp's lr_scale
// on the parsed rule calls it): k = batch / base_batch, linear k, sqrt √k, none 1.
// Pure, header only.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dlsweep {

/// The factor `rule` ("linear" | "sqrt" | "none") scales base_lr by at `batch`; nullopt for
/// another word or a base_batch < 1.
inline std::optional<double> lr_rule_scale(std::string_view rule, std::int64_t batch, std::int64_t base_batch) {
  if (base_batch < 1) return std::nullopt;
  const double k = static_cast<double>(batch) / static_cast<double>(base_batch);
  if (rule == "linear") return k;
  if (rule == "sqrt") return std::sqrt(k);
  if (rule == "none") return 1.0;
  return std::nullopt;
}

}  // namespace dlsweep
