#include "trainer/schedule/lr_schedule.hpp"

#include "common/lr_rule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "trainer/schedule/batch_plan.hpp"

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

std::optional<Decay> parse_decay(std::string_view s) {
  if (s == "constant") return Decay::constant;
  if (s == "step") return Decay::step;
  if (s == "cosine") return Decay::cosine;
  if (s == "poly") return Decay::poly;
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

std::string_view to_string(Decay d) {
  switch (d) {
    case Decay::constant: return "constant";
    case Decay::step: return "step";
    case Decay::cosine: return "cosine";
    case Decay::poly: return "poly";
  }
  return "constant";
}

double lr_scale(LrRule rule, std::int64_t batch, std::int64_t base_batch) {
  // The one copy of the rule's arithmetic (common/lr_rule.hpp, also used without the trainer).
  return lr_rule_scale(to_string(rule), batch, base_batch).value_or(1.0);
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

double decay_multiplier(const DecaySpec& d, std::int64_t step, std::int64_t warmup_steps, std::int64_t total_steps) {
  if (step < warmup_steps) return 1.0;
  switch (d.kind) {
    case Decay::constant: return 1.0;
    case Decay::step: {
      double m = 1.0;
      for (std::int64_t s : d.milestone_steps)
        if (step >= s) m *= d.factor;
      return m;
    }
    case Decay::cosine:
    case Decay::poly: {
      const std::int64_t span = total_steps - warmup_steps;
      if (span <= 0) return 1.0;
      const double p = std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(span), 0.0, 1.0);
      const double shape = d.kind == Decay::cosine ? 0.5 * (1.0 + std::cos(std::numbers::pi * p))
                                                   : std::pow(1.0 - p, d.power);
      return d.floor + (1.0 - d.floor) * shape;
    }
  }
  return 1.0;
}

double LrSchedule::peak_at(std::int64_t step) const {
  double peak = target_lr;
  for (const auto& p : peaks)
    if (step >= p.first_step) peak = p.lr;
  return peak;
}

double LrSchedule::base_at(std::int64_t step) const {
  double base = base_lr;
  for (const auto& p : peaks)
    if (step >= p.first_step) base = p.base;
  return base;
}

double LrSchedule::at(std::int64_t step) const {
  const double peak = peak_at(step);
  if (step < warmup_steps)
    return warmup_lr(step, warmup_steps, start == WarmupStart::base ? base_at(step) : 0.0, peak);
  return peak * decay_multiplier(decay, step, warmup_steps, total_steps);
}

LrSchedule make_lr_schedule(const LrSpec& spec, const BatchPlan& plan) {
  LrSchedule s;
  s.base_lr = spec.base_lr;
  s.start = spec.start;
  s.total_steps = plan.total_steps();
  // A peak starts at every plan stage and at every lr_schedule stage the run reaches.
  std::vector<std::int64_t> starts;
  for (const auto& st : plan.stages()) starts.push_back(st.first_step);
  std::vector<std::pair<std::int64_t, double>> bases = {{0, spec.base_lr}};
  if (!spec.lr_stages.empty()) {
    bases.clear();
    for (const auto& ls : spec.lr_stages) {
      const std::int64_t t = ls.epoch <= 0 ? 0 : plan.steps_until_epoch(ls.epoch);
      if (ls.epoch > 0 && t >= s.total_steps) break;
      if (!bases.empty() && bases.back().first == t) bases.pop_back();  // rounded onto the same step
      bases.emplace_back(t, ls.lr);
      starts.push_back(t);
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  for (std::int64_t t : starts) {
    const auto& st = plan.stages()[plan.stage_of(t)];
    double base = bases.front().second;
    for (const auto& [bt, b] : bases)
      if (t >= bt) base = b;
    s.peaks.push_back({t, scaled_lr(base, spec.rule, st.lr_batch, spec.base_batch) * st.lr_factor, base});
  }
  s.base_lr = s.peaks.front().base;
  s.target_lr = s.peaks.front().lr;
  s.warmup_steps = spec.warmup_steps > 0 ? spec.warmup_steps : plan.steps_until_epoch(spec.warmup_epochs);
  s.warmup_steps = std::min(s.warmup_steps, s.total_steps);
  // Under a Smith ramp the milestones became batch increases (and the stages' lr_factor).
  s.decay.kind = spec.smith ? Decay::constant : spec.decay;
  s.decay.factor = spec.factor;
  s.decay.floor = spec.floor;
  s.decay.power = spec.power;
  if (s.decay.kind == Decay::step)
    for (double m : spec.milestones)
      if (std::int64_t t = plan.steps_until_epoch(m); m > 0 && t < s.total_steps) s.decay.milestone_steps.push_back(t);
  return s;
}

LrSchedule make_lr_schedule(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch,
                            double warmup_epochs, WarmupStart start, std::int64_t steps_per_epoch) {
  LrSchedule s;
  s.base_lr = base_lr;
  s.target_lr = scaled_lr(base_lr, rule, batch, base_batch);
  s.warmup_steps = epochs_to_steps(warmup_epochs, steps_per_epoch);
  s.start = start;
  s.total_steps = std::numeric_limits<std::int64_t>::max();
  return s;
}

}  // namespace dlsweep::trainer::schedule
