#include "trainer/schedule/lr_schedule.hpp"

#include <cmath>

namespace dlsweep::trainer::schedule {

std::optional<LrRule> parse_lr_rule(std::string_view s) {
  if (s == "linear") return LrRule::linear;
  if (s == "sqrt") return LrRule::sqrt;
  if (s == "none") return LrRule::none;
  return std::nullopt;
}

std::optional<WarmupStart> parse_warmup_start(std::string_view s) {
  if (s == "base") return WarmupStart::base;
  if (s == "zero") return WarmupStart::zero;
  return std::nullopt;
}

std::string_view to_string(LrRule r) {
  switch (r) {
    case LrRule::linear: return "linear";
    case LrRule::sqrt: return "sqrt";
    case LrRule::none: return "none";
  }
  return "none";
}

std::string_view to_string(WarmupStart w) { return w == WarmupStart::base ? "base" : "zero"; }

double lr_scale(LrRule rule, std::int64_t batch, std::int64_t base_batch) {
  const double k = static_cast<double>(batch) / static_cast<double>(base_batch);
  switch (rule) {
    case LrRule::linear: return k;
    case LrRule::sqrt: return std::sqrt(k);
    case LrRule::none: return 1.0;
  }
  return 1.0;
}

double scaled_lr(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch) {
  return base_lr * lr_scale(rule, batch, base_batch);
}

double warmup_lr(std::int64_t step, std::int64_t warmup_steps, double start_lr, double target_lr) {
  if (warmup_steps <= 0 || step >= warmup_steps) return target_lr;
  if (step <= 0) return start_lr;
  return start_lr + (target_lr - start_lr) * static_cast<double>(step) / static_cast<double>(warmup_steps);
}

std::int64_t epochs_to_steps(double epochs, std::int64_t steps_per_epoch) {
  return static_cast<std::int64_t>(std::llround(epochs * static_cast<double>(steps_per_epoch)));
}

double LrSchedule::at(std::int64_t step) const {
  const double start_lr = start == WarmupStart::base ? base_lr : 0.0;
  return warmup_lr(step, warmup_steps, start_lr, target_lr);
}

LrSchedule make_lr_schedule(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch,
                            double warmup_epochs, WarmupStart start, std::int64_t steps_per_epoch) {
  LrSchedule s;
  s.base_lr = base_lr;
  s.target_lr = scaled_lr(base_lr, rule, batch, base_batch);
  s.warmup_steps = epochs_to_steps(warmup_epochs, steps_per_epoch);
  s.start = start;
  return s;
}

}  // namespace dlsweep::trainer::schedule
