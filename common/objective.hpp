// objective.hpp — which way an objective is better. Studies, the database and JSON spell the
// direction as the mode "max" or "min"; every comparison of two objective values, and every
// "reached the target" test, goes through these few functions.
#pragma once

#include <string_view>

namespace dlsweep {

/// True for mode "max" (higher is better); "min" otherwise.
constexpr bool maximizes(std::string_view mode) noexcept { return mode == "max"; }

/// True when `a` is strictly better than `b`.
constexpr bool better_value(double a, double b, bool maximize) noexcept { return maximize ? a > b : a < b; }
constexpr bool better_value(double a, double b, std::string_view mode) noexcept {
  return better_value(a, b, maximizes(mode));
}

/// True when `value` has reached `target` (>= for max, <= for min).
constexpr bool reached_target(double value, double target, bool maximize) noexcept {
  return maximize ? value >= target : value <= target;
}

/// ">=" or "<=": how a target is reached, for messages.
constexpr const char* reach_op(std::string_view mode) noexcept { return maximizes(mode) ? ">=" : "<="; }

/// True for the two modes a study may have.
constexpr bool valid_mode(std::string_view mode) noexcept { return mode == "max" || mode == "min"; }

/// `objective.rank_by`: which of a trial's reports of the objective ranks it. "best" (the
/// default): its best eval/final report by the mode; "final": its last one (Optuna's
/// meaning: the value the objective returns). Pruners still compare the values reported at
/// a step; pbt always ranks an interval by its final report.
constexpr bool valid_rank_by(std::string_view rank_by) noexcept { return rank_by == "best" || rank_by == "final"; }

/// "best report" or "final report": the value that ranks a trial, for messages.
constexpr const char* rank_value_phrase(bool final) noexcept { return final ? "final report" : "best report"; }

}  // namespace dlsweep
