#include "trainer/schedule/batch_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::trainer::schedule {

namespace {

std::int64_t round_down(std::int64_t v, std::int64_t multiple) { return v / multiple * multiple; }

}  // namespace

Result<BatchPlan> BatchPlan::build(const PlanSpec& spec) {
  const std::int64_t n = spec.train_size, ranks = std::max<std::int64_t>(1, spec.ranks);
  auto check_batch = [&](std::int64_t b, const char* param) -> Status {
    if (b > n)
      return fail(fmt::format("batch {} is larger than the training set ({} samples)", b, n), param,
                  fmt::format("use batches <= {} or a larger train_subset", n));
    if (b % ranks != 0)
      return fail(fmt::format("batch {} does not divide evenly over {} ranks", b, ranks), param,
                  fmt::format("use a multiple of {}", ranks));
    return {};
  };
  if (auto s = check_batch(spec.batch_size, "batch_size"); !s) return std::unexpected(s.error());

  // (start epoch, batch, lr batch, lr factor) of every stage before layout.
  struct Want {
    double epoch;
    std::int64_t batch, lr_batch;
    double lr_factor;
  };
  std::vector<Want> want;
  switch (spec.ramp.kind) {
    case BatchRamp::Kind::none:
    case BatchRamp::Kind::adaptive:  // laid out by the trainer as it decides (adaptive_batch.hpp)
      want.push_back({0, spec.batch_size, spec.batch_size, 1});
      break;
    case BatchRamp::Kind::stages:
      if (spec.ramp.stages.front().batch != spec.batch_size)
        return fail(fmt::format("batch_ramp starts at batch {} but batch_size is {}", spec.ramp.stages.front().batch,
                                spec.batch_size),
                    "batch_ramp", fmt::format("set batch_size to {} or start the ramp at \"0:{}\"",
                                              spec.ramp.stages.front().batch, spec.batch_size));
      for (const auto& st : spec.ramp.stages) {
        if (st.epoch >= spec.epochs) break;  // never reached: a shortened run need not fit it
        if (auto s = check_batch(st.batch, "batch_ramp"); !s) return std::unexpected(s.error());
        want.push_back({st.epoch, st.batch, st.batch, 1});
      }
      break;
    case BatchRamp::Kind::smith: {
      std::int64_t cap = spec.max_batch > 0 ? std::min(spec.max_batch, n) : n;
      cap = std::max(round_down(cap, ranks), spec.batch_size);
      std::int64_t b = spec.batch_size;
      double lr_factor = 1;
      want.push_back({0, b, spec.batch_size, 1});
      std::vector<double> ms = spec.milestones;
      std::sort(ms.begin(), ms.end());
      for (double m : ms) {
        if (m <= 0 || m >= spec.epochs) continue;
        std::int64_t next = std::llround(static_cast<double>(b) / spec.decay_factor);
        next = std::clamp(round_down(std::min(next, cap), ranks), b, cap);
        lr_factor *= spec.decay_factor * static_cast<double>(next) / static_cast<double>(b);
        b = next;
        if (want.back().epoch == m) want.pop_back();
        want.push_back({m, b, spec.batch_size, lr_factor});
      }
      break;
    }
  }

  BatchPlan plan;
  std::int64_t step = 0, samples = 0;
  for (std::size_t i = 0; i < want.size() && want[i].epoch < spec.epochs; ++i) {
    const double end = i + 1 < want.size() ? std::min(want[i + 1].epoch, spec.epochs) : spec.epochs;
    Stage s;
    s.batch = want[i].batch;
    s.start_epoch = want[i].epoch;
    s.steps_per_epoch = std::max<std::int64_t>(1, n / s.batch);
    s.epoch_base = static_cast<std::int64_t>(std::floor(s.start_epoch));
    s.pos0 = std::llround((s.start_epoch - static_cast<double>(s.epoch_base)) * static_cast<double>(s.steps_per_epoch));
    if (s.pos0 >= s.steps_per_epoch) {
      ++s.epoch_base;
      s.pos0 = 0;
    }
    const std::int64_t end_k =
        std::llround((end - static_cast<double>(s.epoch_base)) * static_cast<double>(s.steps_per_epoch));
    s.steps = end_k - s.pos0;
    s.lr_batch = want[i].lr_batch;
    s.lr_factor = want[i].lr_factor;
    if (s.steps <= 0) continue;
    s.first_step = step;
    s.samples_before = samples;
    step += s.steps;
    samples += s.steps * s.batch;
    plan.stages_.push_back(s);
  }
  if (plan.stages_.empty()) {  // shorter than one step: train one step at the first batch
    Stage s;
    s.batch = s.lr_batch = want.front().batch;
    s.steps_per_epoch = std::max<std::int64_t>(1, n / s.batch);
    s.steps = 1;
    step = 1;
    plan.stages_.push_back(s);
  }
  plan.total_steps_ = step;
  return plan;
}

std::size_t BatchPlan::stage_of(std::int64_t step) const {
  std::size_t s = 0;
  while (s + 1 < stages_.size() && stages_[s + 1].first_step <= step) ++s;
  return s;
}

DataPosition BatchPlan::position(std::int64_t step) const {
  const std::size_t si = stage_of(step);
  const Stage& s = stages_[si];
  const std::int64_t k = s.pos0 + (step - s.first_step);
  return {si, s.epoch_base + k / s.steps_per_epoch, (k % s.steps_per_epoch) * s.batch, s.batch};
}

double BatchPlan::epoch_after(std::int64_t step) const {
  if (step <= 0) {
    const Stage& s = stages_.front();
    return static_cast<double>(s.epoch_base) + static_cast<double>(s.pos0) / static_cast<double>(s.steps_per_epoch);
  }
  const Stage& s = stages_[stage_of(step - 1)];
  const std::int64_t k = s.pos0 + (step - s.first_step);
  return static_cast<double>(s.epoch_base) + static_cast<double>(k) / static_cast<double>(s.steps_per_epoch);
}

std::int64_t BatchPlan::samples_after(std::int64_t step) const {
  if (step <= 0) return 0;
  const Stage& s = stages_[stage_of(step - 1)];
  return s.samples_before + (step - s.first_step) * s.batch;
}

std::int64_t BatchPlan::steps_until_epoch(double e) const {
  std::size_t si = 0;
  while (si + 1 < stages_.size() && stages_[si + 1].start_epoch <= e) ++si;
  const Stage& s = stages_[si];
  const std::int64_t k =
      std::llround((e - static_cast<double>(s.epoch_base)) * static_cast<double>(s.steps_per_epoch)) - s.pos0;
  return s.first_step + std::clamp<std::int64_t>(k, 0, s.steps);
}

bool BatchPlan::eval_after(std::int64_t step, double eval_every) const {
  if (step + 1 >= total_steps_) return true;
  const Stage& s = stages_[stage_of(step)];
  const std::int64_t interval =
      std::max<std::int64_t>(1, std::llround(eval_every * static_cast<double>(s.steps_per_epoch)));
  const std::int64_t k_abs = s.epoch_base * s.steps_per_epoch + s.pos0 + (step - s.first_step) + 1;
  return k_abs % interval == 0;
}

std::int64_t BatchPlan::max_batch() const {
  std::int64_t m = 0;
  for (const auto& s : stages_) m = std::max(m, s.batch);
  return m;
}

}  // namespace dlsweep::trainer::schedule
