// lr_schedule.hpp — learning-rate scaling rules and warmup (REFERENCES.md "LR scaling
// rules"). Pure functions of their arguments: no state, no clock, so they are tested point by
// point and a resumed run recomputes exactly the same LR for any step.
//
// Conventions: steps count optimizer updates from 0; the LR returned for step t is the one
// used by the t-th update. Warmup is linear over T steps: lr_t = start + (target-start)·t/T
// for t < T, then target — so step 0 runs at `start` and step T is the first at `target`.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dlsweep::trainer::schedule {

enum class LrRule { linear, sqrt, none };
enum class WarmupStart { base, zero };

std::optional<LrRule> parse_lr_rule(std::string_view s);
std::optional<WarmupStart> parse_warmup_start(std::string_view s);
std::string_view to_string(LrRule r);
std::string_view to_string(WarmupStart w);

/// k = batch/base_batch mapped through the rule: linear k, sqrt √k, none 1.
double lr_scale(LrRule rule, std::int64_t batch, std::int64_t base_batch);

/// base_lr · lr_scale(rule, batch, base_batch): the LR after warmup.
double scaled_lr(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch);

/// Linear warmup from `start_lr` to `target_lr` over `warmup_steps` (0 = no warmup).
double warmup_lr(std::int64_t step, std::int64_t warmup_steps, double start_lr, double target_lr);

/// Epochs → whole steps (rounded to nearest), for durations given in epochs.
std::int64_t epochs_to_steps(double epochs, std::int64_t steps_per_epoch);

/// Everything that fixes the LR of every step of one run.
struct LrSchedule {
  double base_lr = 0.1;
  double target_lr = 0.1;        ///< scaled_lr(...)
  std::int64_t warmup_steps = 0;
  WarmupStart start = WarmupStart::base;

  /// The LR of update number `step`.
  double at(std::int64_t step) const;
};

/// Builds the schedule of a run with global batch `batch` and `steps_per_epoch` updates per epoch.
LrSchedule make_lr_schedule(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch,
                            double warmup_epochs, WarmupStart start, std::int64_t steps_per_epoch);

}  // namespace dlsweep::trainer::schedule
