// batch_ramp adaptive's decision rule and layout (schedule/adaptive_batch.hpp), with plain
// values: efficiency and AdaScale gain, the goodput choice under a known noise scale and
// step-time model (against the analytic optimum and a brute-force scan), the candidates'
// bounds, the step-time fit, exact epoch coverage whatever the batch changes, the checkpoint
// round trip of a layout, and the LR's warmup/decay on the sample clock.
#include <catch2/catch.hpp>
#include <algorithm>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/batch_ramp.hpp"
#include "trainer/schedule/adaptive_batch.hpp"

using namespace dlsweep::trainer::schedule;

TEST_CASE("batch_ramp adaptive parses", "[schedule][adaptive]") {
  auto r = parse_batch_ramp(" adaptive ");
  REQUIRE(r);
  CHECK(r->kind == BatchRamp::Kind::adaptive);
  auto bad = parse_batch_ramp("adaptiv");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().fix.find("\"adaptive\"") != std::string::npos);
}

TEST_CASE("statistical efficiency and AdaScale's gain", "[schedule][adaptive]") {
  // Pollux: (phi + B0)/(phi + B).
  CHECK(statistical_efficiency(128, 384, 128) == Approx(0.5));
  CHECK(statistical_efficiency(1000, 1000, 1000) == Approx(1.0));
  // No noise: every batch beyond B0 is wasted, gain 1.
  CHECK(statistical_efficiency(0, 512, 128) == Approx(0.25));
  CHECK(adascale_gain(0, 512, 128) == Approx(1.0));
  CHECK(adascale_gain(-5, 512, 128) == Approx(1.0));  // a negative estimate counts as no noise
  // Huge noise: perfect scaling, gain -> B/B0.
  CHECK(adascale_gain(1e12, 512, 128) == Approx(4.0).epsilon(1e-6));
  // AdaScale's own form r = (s2 + m2)/(s2/S + m2), s2 = tr/B0, m2 = |G|^2, S = B/B0:
  // tr = 1280, |G|^2 = 2 (phi = 640), B0 = 64, B = 256: s2 = 20, r = 22/7.
  CHECK(adascale_gain(640, 256, 64) == Approx(22.0 / 7.0));
  CHECK(adascale_gain(640, 64, 64) == Approx(1.0));
  // Below B0 the gain is below 1 (the LR shrinks).
  CHECK(adascale_gain(640, 32, 64) < 1.0);
}

TEST_CASE("candidates: geometric, multiples of the ranks, within the bounds", "[schedule][adaptive]") {
  auto c = candidate_batches(64, 4096, 1);
  REQUIRE(c.size() >= 20);
  CHECK(c.front() == 64);
  CHECK(c.back() == 4096);
  for (std::size_t i = 1; i < c.size(); ++i) CHECK(c[i] > c[i - 1]);
  auto c3 = candidate_batches(100, 1000, 3);
  CHECK(c3.front() == 99);
  CHECK(c3.back() == 999);
  for (auto b : c3) CHECK(b % 3 == 0);
  CHECK(candidate_batches(5, 5, 8) == std::vector<std::int64_t>{8});  // at least one sample per rank
  CHECK(candidate_batches(256, 256, 2) == std::vector<std::int64_t>{256});
}

TEST_CASE("the step-time fit", "[schedule][adaptive]") {
  std::vector<TimingPoint> line = {{16, 0.01 + 16e-4, 1}, {64, 0.01 + 64e-4, 3}, {256, 0.01 + 256e-4, 2}};
  auto m = fit_step_time(line);
  CHECK(m.alpha == Approx(0.01));
  CHECK(m.beta == Approx(1e-4));
  CHECK(m.throughput(512, 2) == Approx(512 / (0.01 + 256e-4)));
  // Negative slope (noise): constant time at the mean.
  auto flat = fit_step_time(std::vector<TimingPoint>{{16, 0.3, 1}, {64, 0.1, 1}});
  CHECK(flat.beta == 0);
  CHECK(flat.alpha == Approx(0.2));
  // Negative intercept: through the origin.
  auto origin = fit_step_time(std::vector<TimingPoint>{{10, 0.5, 1}, {20, 2.0, 1}});
  CHECK(origin.alpha == 0);
  CHECK(origin.beta > 0);
  // One batch size: all of it proportional to the batch.
  auto one = fit_step_time(std::vector<TimingPoint>{{32, 0.064, 5}});
  CHECK(one.alpha == 0);
  CHECK(one.beta == Approx(0.002));
  CHECK(fit_step_time(std::vector<TimingPoint>{}).beta == 0);
}

TEST_CASE("the choice maximises goodput under a known noise scale and step time", "[schedule][adaptive]") {
  const auto cand = candidate_batches(64, 16384, 1, 48);
  const StepTimeModel model{0.01, 1e-5};
  // goodput = B/(a + bB) * (phi + B0)/(phi + B) peaks at B* = sqrt(a phi / b) = 1000 here.
  const double phi = 1000;
  const auto d = choose_batch(cand, phi, 64, model, 1);
  CHECK(d.batch > 1000 / 1.2);
  CHECK(d.batch < 1000 * 1.2);
  for (auto b : cand) {  // and no candidate does better
    const double g = model.throughput(b, 1) * statistical_efficiency(phi, static_cast<double>(b), 64);
    CHECK(g <= d.goodput * (1 + 1e-12));
  }
  CHECK(d.efficiency == Approx(statistical_efficiency(phi, static_cast<double>(d.batch), 64)));
  CHECK(d.gain == Approx(adascale_gain(phi, static_cast<double>(d.batch), 64)));
  CHECK(d.throughput == Approx(static_cast<double>(d.batch) / (0.01 + 1e-5 * static_cast<double>(d.batch))));
  // The optimum grows as sqrt(phi): 4x the noise, about 2x the batch.
  const auto d4 = choose_batch(cand, 4 * phi, 64, model, 1);
  CHECK(static_cast<double>(d4.batch) / static_cast<double>(d.batch) == Approx(2.0).epsilon(0.25));
  // Per-rank time: on 4 ranks the same global batch takes a quarter of the compute, so the
  // optimum sqrt(a phi P / b) doubles.
  const auto d_ranks = choose_batch(candidate_batches(64, 16384, 4, 48), phi, 64, model, 4);
  CHECK(static_cast<double>(d_ranks.batch) / static_cast<double>(d.batch) == Approx(2.0).epsilon(0.25));
  CHECK(d_ranks.batch % 4 == 0);
  // Bounds: no noise -> the smallest batch; pure fixed cost and huge noise -> the largest.
  CHECK(choose_batch(cand, 0, 64, model, 1).batch == cand.front());
  CHECK(choose_batch(cand, 1e15, 64, StepTimeModel{0.01, 0}, 1).batch == cand.back());
  // No timing yet (T = 0 everywhere): the smallest, not an arbitrary one.
  CHECK(choose_batch(cand, phi, 64, StepTimeModel{}, 1).batch == cand.front());
}

namespace {

// Walks `steps` updates of a layout, splitting each batch at epoch ends, and checks every
// epoch reads its permutation from 0 in order, each position exactly once, none skipped.
void check_coverage(const AdaptiveLayout& l, std::int64_t n, std::int64_t steps) {
  std::int64_t epoch = 0, next = 0, samples = 0;
  double prev_epoch = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    const auto p = l.position(t);
    REQUIRE(p.batch >= 1);
    REQUIRE(p.batch <= n);
    REQUIRE(p.epoch == epoch);
    REQUIRE(p.offset == next);  // no sample skipped or read twice
    next += p.batch;
    if (next >= n) {  // the batch finished this epoch (and went on into the next one)
      ++epoch;
      next -= n;
      REQUIRE(next < n);
    }
    samples += p.batch;
    REQUIRE(l.samples_after(t + 1) == samples);
    const double e = l.epoch_after(t + 1);
    REQUIRE(e > prev_epoch);
    REQUIRE(e == static_cast<double>(samples) / static_cast<double>(n));
    prev_epoch = e;
  }
}

}  // namespace

TEST_CASE("batch changes keep the epoch order exact", "[schedule][adaptive]") {
  const std::int64_t n = 1000;
  AdaptiveLayout l(n, 64, 1.0);
  CHECK(l.position(0).epoch == 0);
  CHECK(l.position(15).offset == 15 * 64);
  CHECK(l.position(16).epoch == 1);  // step 15 read the last 40 of epoch 0 and the first 24 of epoch 1
  CHECK(l.position(16).offset == 24);
  CHECK(l.epoch_after(3) == Approx(192.0 / 1000));
  // Deterministic pseudo-random changes, including one at the same step twice.
  std::uint64_t x = 12345;
  std::int64_t step = 0;
  for (int i = 0; i < 40; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    step += 1 + static_cast<std::int64_t>((x >> 33) % 23);
    const std::int64_t b = 1 + static_cast<std::int64_t>((x >> 13) % 1000);
    l.change(step, b, 1.0 + i);
    if (i == 10) l.change(step, b % 1000 + 1, 0.5);  // a second decision at the same step replaces the first
  }
  REQUIRE(l.stages().size() == 41);
  check_coverage(l, n, step + 200);
  // Restore: the same stages give the same layout; damaged ones are refused.
  std::vector<AdaptiveStage> st(l.stages().begin(), l.stages().end());
  AdaptiveLayout back;
  REQUIRE(AdaptiveLayout::restore(n, st, back));
  for (std::int64_t t = 0; t < step + 50; t += 7) {
    CHECK(back.position(t).offset == l.position(t).offset);
    CHECK(back.position(t).epoch == l.position(t).epoch);
    CHECK(back.stage_at(t).lr_scale == l.stage_at(t).lr_scale);
  }
  auto bad = st;
  bad[5].samples_before += 1;
  CHECK_FALSE(AdaptiveLayout::restore(n, bad, back));
  bad = st;
  bad[3].first_step = bad[2].first_step;
  CHECK_FALSE(AdaptiveLayout::restore(n, bad, back));
  bad = st;
  bad[0].first_step = 1;
  CHECK_FALSE(AdaptiveLayout::restore(n, bad, back));
  CHECK_FALSE(AdaptiveLayout::restore(n, {}, back));
  CHECK_FALSE(AdaptiveLayout::restore(10, st, back));  // batches larger than the data
}

TEST_CASE("a batch the size of the data reads every sample each epoch", "[schedule][adaptive]") {
  AdaptiveLayout l(600, 100, 1);
  l.change(3, 600, 1);  // from offset 300: the rest of epoch 0, then the first half of epoch 1
  CHECK(l.position(3).epoch == 0);
  CHECK(l.position(3).offset == 300);
  CHECK(l.position(4).epoch == 1);
  CHECK(l.position(4).offset == 300);
  CHECK(l.epoch_after(4) == 1.5);
  check_coverage(l, 600, 10);
}

TEST_CASE("the adaptive LR: scale, warmup and decay on the sample clock", "[schedule][adaptive]") {
  AdaptiveLrSpec s;
  s.base_lr = 0.1;
  s.train_size = 1000;
  s.total = 10000;  // 10 epochs
  CHECK(adaptive_lr(s, 0, 2.5) == Approx(0.25));
  CHECK(adaptive_lr(s, 9999, 2.5) == Approx(0.25));
  s.warmup = 2000;
  s.start = WarmupStart::zero;
  CHECK(adaptive_lr(s, 0, 2.0) == 0);
  CHECK(adaptive_lr(s, 1000, 2.0) == Approx(0.1));
  CHECK(adaptive_lr(s, 2000, 2.0) == Approx(0.2));
  s.start = WarmupStart::base;
  CHECK(adaptive_lr(s, 0, 2.0) == Approx(0.1));
  CHECK(adaptive_lr(s, 1000, 2.0) == Approx(0.15));
  s.decay.kind = Decay::cosine;
  s.decay.floor = 0.1;
  CHECK(adaptive_lr(s, 2000, 1.0) == Approx(0.1));
  CHECK(adaptive_lr(s, 6000, 1.0) == Approx(0.1 * (0.1 + 0.9 * 0.5)));
  CHECK(adaptive_lr(s, 10000, 1.0) == Approx(0.01));
  s.decay.kind = Decay::step;
  s.decay.milestone_steps = {5000, 7500};
  s.decay.factor = 0.1;
  CHECK(adaptive_lr(s, 4999, 1.0) == Approx(0.1));
  CHECK(adaptive_lr(s, 5000, 1.0) == Approx(0.01));
  CHECK(adaptive_lr(s, 7500, 3.0) == Approx(0.003));
  s.decay.kind = Decay::constant;
  s.warmup = 0;
  s.lr_stages = {{0, 0.2}, {4, 0.05}};  // lr_schedule: base LR by epoch
  CHECK(adaptive_lr(s, 3999, 1.0) == Approx(0.2));
  CHECK(adaptive_lr(s, 4000, 2.0) == Approx(0.1));
}

TEST_CASE("the start-up profile stays within its budget and spans 4x", "[schedule][adaptive]") {
  const auto cand = candidate_batches(64, 4096, 1);
  auto cost = [](const std::vector<std::int64_t>& s) {
    std::int64_t c = 0;
    for (auto b : s) c += 3 * b;
    return c;
  };
  // A budget that covers the whole range: four sizes from the first candidate to the last.
  const auto all = profile_batches(cand, 1, 1e9, 3);
  REQUIRE(all.size() == 4);
  CHECK(all.front() == 64);
  CHECK(all.back() == 4096);
  // A short CNN run (3 epochs of 12,000 images, 5%): the largest top within 1,800 samples.
  const auto cnn = profile_batches(cand, 1, 1800, 3);
  CHECK(cost(cnn) <= 1800);
  CHECK(cnn.front() == 64);
  CHECK(cnn.back() >= 256);  // at least 4x the smallest
  for (std::size_t i = 1; i < cnn.size(); ++i) CHECK(cnn[i] > cnn[i - 1]);
  // The largest such top: the next candidate up would not fit.
  const auto it = std::find(cand.begin(), cand.end(), cnn.back());
  REQUIRE(it != cand.end());
  REQUIRE(it + 1 != cand.end());
  const auto next = profile_batches(std::vector<std::int64_t>(cand.begin(), it + 2), 1, 1e9, 3);
  CHECK(cost(next) > 1800);
  // A budget below even the 4x span: the span wins (a slope needs it), over budget.
  const auto tiny = profile_batches(cand, 1, 10, 3);
  CHECK(tiny.front() == 64);
  CHECK(tiny.back() >= 256);
  CHECK(tiny.back() < 4 * 64 * 1.3);
  // Per rank: the candidates divided by the ranks.
  const auto two = profile_batches(candidate_batches(64, 4096, 2), 2, 900, 3);
  CHECK(two.front() == 32);
  CHECK(cost(two) <= 900);
  // A range narrower than 4x: all of it.
  const auto narrow = profile_batches(candidate_batches(64, 128, 1), 1, 10, 3);
  CHECK(narrow.front() == 64);
  CHECK(narrow.back() == 128);
}
