// batch_plan.hpp — which global batch size each update uses, and where in the data it reads:
// the batch-size ramp of a run (Smith, Kindermans, Ying & Le 2017; docs/math.md#batch-size-ramps)
// laid out in steps. Pure: built from the parameters and the training-set size, no
// state, so a resumed run recomputes the position of any step without replaying earlier ones.
//
// A plan is a list of stages. Stage s starts at epoch e_s (the first at 0) with global batch
// B_s and steps_per_epoch_s = floor(N / B_s) (each shuffled epoch's tail is dropped). A
// position in the data is (epoch, k): k updates of the current stage's batch into that epoch's
// permutation. A stage starting at a fractional epoch e starts at k = round(frac(e)·spe_s), so a
// batch change mid-epoch keeps the fraction of the epoch already consumed (a few samples may
// be skipped or repeated at that boundary: documented rounding). Stage lengths are rounded to
// whole steps; stages that round to zero steps are dropped. Without a ramp there is one stage
// and the layout is the plain one: step t reads epoch t / spe, offset (t % spe)·B.
//
// Ramps (params.json `batch_ramp`):
//  - "none": one stage at batch_size;
//  - "E:B,E:B,...": explicit stages (first epoch must be 0; epochs increasing); the LR follows
//    the scaling rule at each stage's batch;
//  - "smith": every milestone of the step decay (decay_milestones, decay_factor f) becomes a
//    batch increase B → min(B/f, max batch) instead of an LR decay. The LR is that of the
//    scaling rule at the initial batch and is kept (Smith's method), except where the cap
//    stops the batch from growing by the full 1/f: there the LR takes the rest of the decay,
//    lr_new = f·lr·B_new/B, so lr/B (the SGD noise scale) shrinks by f at every milestone,
//    exactly as under the step schedule.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "common/batch_ramp.hpp"

namespace dlsweep::trainer::schedule {

/// One stage of a plan.
struct Stage {
  std::int64_t batch = 0;            ///< global batch B_s
  double start_epoch = 0;            ///< e_s
  std::int64_t steps_per_epoch = 0;  ///< floor(N / B_s)
  std::int64_t first_step = 0;       ///< index of its first update
  std::int64_t steps = 0;            ///< updates in this stage (>= 1)
  std::int64_t epoch_base = 0;       ///< data epoch of its first update ...
  std::int64_t pos0 = 0;             ///< ... and k (updates of this batch into that epoch)
  std::int64_t samples_before = 0;   ///< samples consumed by the earlier stages
  std::int64_t lr_batch = 0;         ///< the batch whose scaling-rule LR this stage uses
  double lr_factor = 1;              ///< extra LR multiplier (smith: decay where the cap bites)
};

/// Where update `step` reads its global batch.
struct DataPosition {
  std::size_t stage = 0;
  std::int64_t epoch = 0;   ///< the permutation data::epoch_order(seed, epoch)
  std::int64_t offset = 0;  ///< first sample of the global batch in that permutation
  std::int64_t batch = 0;
};

/// What a plan is built from.
struct PlanSpec {
  std::int64_t train_size = 0;      ///< N
  double epochs = 1;                ///< training length E
  std::int64_t batch_size = 128;    ///< initial global batch
  BatchRamp ramp;
  std::vector<double> milestones;   ///< smith: epochs of the batch increases (already defaulted)
  double decay_factor = 0.1;        ///< smith: f
  std::int64_t max_batch = 0;       ///< smith: cap (0 = the training set size)
  std::int64_t ranks = 1;           ///< every batch must be a multiple of this
};

class BatchPlan {
 public:
  /// Checks the stages against the data and ranks; errors name the parameter and the fix.
  static Result<BatchPlan> build(const PlanSpec& spec);

  std::span<const Stage> stages() const { return stages_; }
  std::int64_t total_steps() const { return total_steps_; }
  /// The stage holding update `step` (the last one for step >= total_steps()).
  std::size_t stage_of(std::int64_t step) const;
  DataPosition position(std::int64_t step) const;
  /// Epochs completed after `step` updates (fractional).
  double epoch_after(std::int64_t step) const;
  /// Samples consumed by the first `step` updates.
  std::int64_t samples_after(std::int64_t step) const;
  /// Number of updates that end at (or nearest before) epoch `e`: the step index at which
  /// something scheduled "at epoch e" starts. Clamped to [0, total_steps()].
  std::int64_t steps_until_epoch(double e) const;
  /// True when an evaluation follows update `step` (every round(eval_every·spe_s) updates of
  /// the stage counted from epoch 0, and after the last update).
  bool eval_after(std::int64_t step, double eval_every) const;
  /// The largest batch of the plan.
  std::int64_t max_batch() const;

 private:
  std::vector<Stage> stages_;
  std::int64_t total_steps_ = 0;
};

}  // namespace dlsweep::trainer::schedule
