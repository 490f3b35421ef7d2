// adaptive_batch.hpp — `batch_ramp: adaptive`: the decision rule that picks the global batch
// of a run as it trains (docs/math.md#goodput, #adaptive-batch), and the data layout of the
// batches it picked. Pure: no clock, no I/O; the trainer feeds it the measured noise scale and
// step-time model and lays its answers out (trainer.cpp, trainer_adaptive.cpp).
//
// Decision (Pollux, Qiao et al. OSDI 2021; the gain of AdaScale, Johnson et al. ICML 2020):
//   efficiency(B) = (φ + B0)/(φ + B)           φ = B_simple, B0 = base_batch
//   gain(B)       = efficiency(B)·B/B0 = (φ/B0 + 1)/(φ/B + 1)    (AdaScale's r for S = B/B0)
//   throughput(B) = B / T(B/P),  T(b) = α + β·b  (per-rank step time, fitted in the run)
//   choose        argmax_B throughput(B)·efficiency(B) over the candidates (smaller B on ties)
// Candidates: about 24 sizes geometrically spaced over [min, max], each rounded down to a
// multiple of the ranks P (as every ramp's batches must be), with min and max themselves.
//
// Layout: the data is the sequence of the epochs' permutations one after the other, and every
// update reads the next B samples of it: update t reads global positions [g_t, g_t + B_t),
// g_t = samples read before it, i.e. epoch g_t / N from offset g_t mod N. A batch that reaches
// the end of an epoch continues at the start of the next permutation (it straddles the two;
// B <= N, so never more). Nothing is dropped: whatever the batches, each epoch reads every
// sample of its permutation exactly once, in order. (Fixed-batch runs drop each epoch's tail
// instead, batch_plan.hpp; a changing batch would make that tail, and so the samples an epoch
// skips, depend on the decisions.) Epochs are samples / N.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trainer/schedule/batch_plan.hpp"
#include "trainer/schedule/lr_schedule.hpp"

namespace dlsweep::trainer::schedule {

/// Per-rank step time T(b) = alpha + beta·b seconds (b = B/P).
struct StepTimeModel {
  double alpha = 0, beta = 0;
  double seconds(double per_rank_batch) const { return alpha + beta * per_rank_batch; }
  /// Samples per second of global batch `batch` on `ranks` ranks (0 where T <= 0).
  double throughput(std::int64_t batch, std::int64_t ranks) const;
};

/// One measured mean step time (weight: how many steps it averages, or any positive weight).
struct TimingPoint {
  double per_rank_batch = 0, seconds = 0, weight = 1;
};

/// Weighted least squares of T(b) = alpha + beta·b, constrained to alpha >= 0, beta >= 0
/// (a negative fitted slope gives beta = 0 and alpha the weighted mean; a negative intercept
/// gives alpha = 0 and the slope through the origin). One distinct b: alpha = 0, beta = T/b.
/// No usable point: {0, 0}.
StepTimeModel fit_step_time(std::span<const TimingPoint> points);

/// (φ + B0)/(φ + B); φ <= 0 (no noise measured as positive) counts as 0: B0/B.
double statistical_efficiency(double phi, double batch, double base_batch);
/// AdaScale's gain r = efficiency·B/B0 (1 at B = B0; between 1 and B/B0 for B > B0).
double adascale_gain(double phi, double batch, double base_batch);

/// Geometric candidates over [lo, hi], multiples of `ranks` (lo and hi rounded down, at least
/// `ranks`), ascending, distinct; about `count` of them.
std::vector<std::int64_t> candidate_batches(std::int64_t lo, std::int64_t hi, std::int64_t ranks, int count = 24);

/// The per-rank batches the start-up profile times (trainer_adaptive.cpp): up to four of the
/// candidates, geometrically spread from the smallest to a top candidate, divided by `ranks`.
/// The top is the largest candidate whose profile costs at most `budget` per-rank samples
/// (`reps` passes of each size), but never below the smallest candidate at least `min_spread`
/// times the first (the span a slope needs; the last candidate where none is): a profile up to
/// `adaptive_max_batch` would cost a short CNN run as much as its first epoch. Larger batches
/// are extrapolated from the fit until the run's own steps reach them.
std::vector<std::int64_t> profile_batches(std::span<const std::int64_t> candidates, std::int64_t ranks,
                                          double budget, int reps, double min_spread = 4);

struct Decision {
  std::int64_t batch = 0;
  double efficiency = 0, throughput = 0, goodput = 0, gain = 1;
};

/// The candidate of the largest goodput (the smallest one on ties, and when every throughput
/// is 0). `candidates` must not be empty.
Decision choose_batch(std::span<const std::int64_t> candidates, double phi, std::int64_t base_batch,
                      const StepTimeModel& model, std::int64_t ranks);

/// One batch of an adaptive run, from `first_step` on.
struct AdaptiveStage {
  std::int64_t first_step = 0, batch = 0;
  std::int64_t samples_before = 0;     ///< samples read by the earlier stages
  double lr_scale = 1;                 ///< its LR multiplier (AdaScale gain or lr_rule scale)
};

class AdaptiveLayout {
 public:
  AdaptiveLayout() = default;
  /// One stage at step 0: `batch` (<= train_size) from epoch 0, offset 0.
  AdaptiveLayout(std::int64_t train_size, std::int64_t batch, double lr_scale);
  /// Rebuilds a layout from stages (a checkpoint's); false when they are not a valid layout
  /// of `train_size` (first at step 0, steps increasing, batches in [1, N], samples where the
  /// earlier stages end).
  static bool restore(std::int64_t train_size, std::vector<AdaptiveStage> stages, AdaptiveLayout& out);

  /// From update `step` on, `batch` (<= N) at `lr_scale`. Stages from `step` on are replaced
  /// (a decision at the step of the last change replaces it); step >= the first stage's.
  void change(std::int64_t step, std::int64_t batch, double lr_scale);

  std::span<const AdaptiveStage> stages() const { return stages_; }
  const AdaptiveStage& stage_at(std::int64_t step) const;
  /// Where update `step` starts reading (offset + batch > N: it continues in epoch + 1).
  DataPosition position(std::int64_t step) const;
  /// Samples read by the first `step` updates, and as epochs (samples / N).
  std::int64_t samples_after(std::int64_t step) const;
  double epoch_after(std::int64_t step) const;

 private:
  std::int64_t n_ = 1;
  std::vector<AdaptiveStage> stages_;
};

/// The LR of an adaptive run at the clock c = samples read before an update (so warmup and
/// decay follow the data read, whatever the batches):
/// peak = base(c)·scale; c < W: start + (peak − start)·c/W (start base(c) or 0); else
/// peak·decay_multiplier(decay, c, W, T). W, T and the milestones are in the same units.
struct AdaptiveLrSpec {
  double base_lr = 0.1;
  std::vector<LrStage> lr_stages;  ///< base LR by epoch (empty: base_lr)
  std::int64_t train_size = 1;     ///< N
  std::int64_t warmup = 0;         ///< W
  WarmupStart start = WarmupStart::base;
  DecaySpec decay;                 ///< milestone_steps in clock units
  std::int64_t total = 1;          ///< T = epochs·N
};
double adaptive_lr(const AdaptiveLrSpec& s, std::int64_t clock, double scale);

}  // namespace dlsweep::trainer::schedule
