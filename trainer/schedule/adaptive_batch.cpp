#include "trainer/schedule/adaptive_batch.hpp"

#include <algorithm>
#include <cmath>

namespace dlsweep::trainer::schedule {

double StepTimeModel::throughput(std::int64_t batch, std::int64_t ranks) const {
  const double t = seconds(static_cast<double>(batch) / static_cast<double>(std::max<std::int64_t>(1, ranks)));
  return t > 0 ? static_cast<double>(batch) / t : 0.0;
}

StepTimeModel fit_step_time(std::span<const TimingPoint> points) {
  double w = 0, sb = 0, st = 0;
  for (const auto& p : points)
    if (p.weight > 0 && p.per_rank_batch > 0 && std::isfinite(p.seconds) && p.seconds >= 0) {
      w += p.weight;
      sb += p.weight * p.per_rank_batch;
      st += p.weight * p.seconds;
    }
  if (w <= 0) return {};
  const double mb = sb / w, mt = st / w;
  double sbb = 0, sbt = 0, sbb0 = 0, sbt0 = 0;
  for (const auto& p : points)
    if (p.weight > 0 && p.per_rank_batch > 0 && std::isfinite(p.seconds) && p.seconds >= 0) {
      sbb += p.weight * (p.per_rank_batch - mb) * (p.per_rank_batch - mb);
      sbt += p.weight * (p.per_rank_batch - mb) * (p.seconds - mt);
      sbb0 += p.weight * p.per_rank_batch * p.per_rank_batch;
      sbt0 += p.weight * p.per_rank_batch * p.seconds;
    }
  // One distinct batch: all of the time is taken to scale with it (no evidence of a fixed cost).
  if (sbb <= 1e-12 * std::max(1.0, mb * mb * w)) return {0, mt / mb};
  StepTimeModel m{0, sbt / sbb};
  m.alpha = mt - m.beta * mb;
  if (m.beta < 0) return {mt, 0};
  if (m.alpha < 0) return {0, sbt0 / sbb0};
  return m;
}

double statistical_efficiency(double phi, double batch, double base_batch) {
  const double p = phi > 0 && std::isfinite(phi) ? phi : 0.0;
  return (p + base_batch) / (p + batch);
}

double adascale_gain(double phi, double batch, double base_batch) {
  return statistical_efficiency(phi, batch, base_batch) * batch / base_batch;
}

std::vector<std::int64_t> candidate_batches(std::int64_t lo, std::int64_t hi, std::int64_t ranks, int count) {
  ranks = std::max<std::int64_t>(1, ranks);
  auto down = [&](std::int64_t b) { return std::max(ranks, b / ranks * ranks); };
  lo = down(lo);
  hi = std::max(lo, down(hi));
  std::vector<std::int64_t> out = {lo};
  const int n = std::max(2, count);
  const double ratio = std::pow(static_cast<double>(hi) / static_cast<double>(lo), 1.0 / (n - 1));
  for (int i = 1; i < n - 1; ++i) {
    const std::int64_t b = down(std::llround(static_cast<double>(lo) * std::pow(ratio, i)));
    if (b > out.back() && b < hi) out.push_back(b);
  }
  if (hi > out.back()) out.push_back(hi);
  return out;
}

std::vector<std::int64_t> profile_batches(std::span<const std::int64_t> candidates, std::int64_t ranks,
                                          double budget, int reps, double min_spread) {
  if (candidates.empty()) return {};
  ranks = std::max<std::int64_t>(1, ranks);
  auto sizes = [&](std::size_t top) {
    std::vector<std::int64_t> out;
    for (std::size_t k = 0; k < 4; ++k) {
      const std::int64_t b = std::max<std::int64_t>(1, candidates[top * k / 3] / ranks);
      if (out.empty() || b > out.back()) out.push_back(b);
    }
    return out;
  };
  auto cost = [&](const std::vector<std::int64_t>& s) {
    double c = 0;
    for (std::int64_t b : s) c += static_cast<double>(b);
    return c * std::max(1, reps);
  };
  std::size_t floor_top = candidates.size() - 1;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (static_cast<double>(candidates[i]) >= min_spread * static_cast<double>(candidates.front())) {
      floor_top = i;
      break;
    }
  for (std::size_t top = candidates.size() - 1; top > floor_top; --top)
    if (auto s = sizes(top); cost(s) <= budget) return s;
  return sizes(floor_top);
}

Decision choose_batch(std::span<const std::int64_t> candidates, double phi, std::int64_t base_batch,
                      const StepTimeModel& model, std::int64_t ranks) {
  Decision best;
  bool first = true;
  for (std::int64_t b : candidates) {
    Decision d;
    d.batch = b;
    d.efficiency = statistical_efficiency(phi, static_cast<double>(b), static_cast<double>(base_batch));
    d.gain = adascale_gain(phi, static_cast<double>(b), static_cast<double>(base_batch));
    d.throughput = model.throughput(b, ranks);
    d.goodput = d.throughput * d.efficiency;
    // Strictly larger (relative margin against rounding): ties keep the smaller batch.
    if (first || d.goodput > best.goodput * (1 + 1e-12)) best = d;
    first = false;
  }
  return best;
}

AdaptiveLayout::AdaptiveLayout(std::int64_t train_size, std::int64_t batch, double lr_scale)
    : n_(std::max<std::int64_t>(1, train_size)) {
  stages_.push_back({0, std::clamp<std::int64_t>(batch, 1, n_), 0, lr_scale});
}

bool AdaptiveLayout::restore(std::int64_t train_size, std::vector<AdaptiveStage> stages, AdaptiveLayout& out) {
  if (stages.empty() || train_size < 1) return false;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& s = stages[i];
    if (s.batch < 1 || s.batch > train_size || !std::isfinite(s.lr_scale)) return false;
    const std::int64_t want_samples =
        i == 0 ? 0 : stages[i - 1].samples_before + (s.first_step - stages[i - 1].first_step) * stages[i - 1].batch;
    if ((i == 0 ? s.first_step != 0 : s.first_step <= stages[i - 1].first_step) || s.samples_before != want_samples)
      return false;
  }
  out.n_ = train_size;
  out.stages_ = std::move(stages);
  return true;
}

void AdaptiveLayout::change(std::int64_t step, std::int64_t batch, double lr_scale) {
  step = std::max<std::int64_t>(step, 0);
  while (!stages_.empty() && stages_.back().first_step >= step) stages_.pop_back();
  AdaptiveStage s;
  s.first_step = step;
  s.batch = std::clamp<std::int64_t>(batch, 1, n_);
  s.lr_scale = lr_scale;
  if (!stages_.empty()) s.samples_before = stages_.back().samples_before + (step - stages_.back().first_step) * stages_.back().batch;
  stages_.push_back(s);
}

const AdaptiveStage& AdaptiveLayout::stage_at(std::int64_t step) const {
  std::size_t i = 0;
  while (i + 1 < stages_.size() && stages_[i + 1].first_step <= step) ++i;
  return stages_[i];
}

DataPosition AdaptiveLayout::position(std::int64_t step) const {
  std::size_t i = 0;
  while (i + 1 < stages_.size() && stages_[i + 1].first_step <= step) ++i;
  const AdaptiveStage& s = stages_[i];
  const std::int64_t g = s.samples_before + std::max<std::int64_t>(0, step - s.first_step) * s.batch;
  DataPosition p;
  p.stage = i;
  p.batch = s.batch;
  p.epoch = g / n_;
  p.offset = g % n_;
  return p;
}

std::int64_t AdaptiveLayout::samples_after(std::int64_t step) const {
  if (step <= 0) return 0;
  const AdaptiveStage& s = stage_at(step - 1);
  return s.samples_before + (step - s.first_step) * s.batch;
}

double AdaptiveLayout::epoch_after(std::int64_t step) const {
  return static_cast<double>(samples_after(step)) / static_cast<double>(n_);
}

double adaptive_lr(const AdaptiveLrSpec& s, std::int64_t clock, double scale) {
  double base = s.base_lr;
  for (const auto& st : s.lr_stages)
    if (static_cast<double>(clock) >= st.epoch * static_cast<double>(s.train_size)) base = st.lr;
  const double peak = base * scale;
  if (clock < s.warmup) {
    const double start = s.start == WarmupStart::base ? base : 0.0;
    return start + (peak - start) * static_cast<double>(clock) / static_cast<double>(s.warmup);
  }
  return peak * decay_multiplier(s.decay, clock, s.warmup, s.total);
}

}  // namespace dlsweep::trainer::schedule
