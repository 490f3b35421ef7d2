// lr_schedule.hpp — the learning rate of every update: scaling rule, warmup and decay
// (docs/math.md#lr-scaling-rules, #warmup, #decay-schedules). Pure functions of
// their arguments: no state, no clock, so they are tested point by point and a resumed run
// recomputes exactly the same LR for any step.
//
// Conventions: steps count optimizer updates from 0; the LR returned for step t is the one
// used by the t-th update. T = total updates of the run, W = warmup updates.
//  - peak(t) = base_t · rule(B_t / base_batch) · f_t, where B_t is the batch the plan's stage
//    of t scales the LR by (its own batch, or the initial one under a Smith ramp) and f_t the
//    stage's extra factor (batch_plan.hpp); base_t is base_lr, or under `lr_schedule`
//    ("E:L,...") the L of the last stage whose epoch E the plan has reached at t (its first
//    update is the one that starts at epoch E: BatchPlan::steps_until_epoch);
//  - warmup, t < W: lr = start + (peak(t) − start)·t/W, start = base_t (Goyal) or 0; so step 0
//    runs at `start` and step W is the first at the peak;
//  - decay, t >= W, with progress p = (t − W)/(T − W) in [0, 1):
//      constant  lr = peak
//      step      lr = peak · factor^(number of milestones reached; a milestone at epoch e is
//                reached from the update that starts at epoch e)
//      cosine    lr = peak · (floor + (1 − floor)·(1 + cos(π·p))/2)
//      poly      lr = peak · (floor + (1 − floor)·(1 − p)^power)   (LARS paper: power 2, floor 0)
//    `floor` (params.json lr_floor) is a FRACTION of the peak LR, so one value suits every
//    batch size of a sweep; 0 decays to zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/batch_ramp.hpp"

namespace dlsweep::trainer::schedule {

class BatchPlan;

enum class LrRule { linear, sqrt, none };
enum class WarmupStart { base, zero };
enum class Decay { constant, step, cosine, poly };

std::optional<LrRule> parse_lr_rule(std::string_view s);
std::optional<WarmupStart> parse_warmup_start(std::string_view s);
std::optional<Decay> parse_decay(std::string_view s);
std::string_view to_string(LrRule r);
std::string_view to_string(WarmupStart w);
std::string_view to_string(Decay d);

/// k = batch/base_batch mapped through the rule: linear k, sqrt √k, none 1.
double lr_scale(LrRule rule, std::int64_t batch, std::int64_t base_batch);

/// base_lr · lr_scale(rule, batch, base_batch): the LR after warmup.
double scaled_lr(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch);

/// Linear warmup from `start_lr` to `target_lr` over `warmup_steps` (0 = no warmup).
double warmup_lr(std::int64_t step, std::int64_t warmup_steps, double start_lr, double target_lr);

/// Epochs → whole steps (rounded to nearest), for durations given in epochs.
std::int64_t epochs_to_steps(double epochs, std::int64_t steps_per_epoch);

/// How the LR decays after warmup.
struct DecaySpec {
  Decay kind = Decay::constant;
  std::vector<std::int64_t> milestone_steps;  ///< step: first update at each milestone
  double factor = 0.1;                        ///< step: multiplier per milestone
  double floor = 0;                           ///< cosine/poly: final LR as a fraction of the peak
  double power = 2;                           ///< poly
};

/// The decay multiplier of update `step` (1 during warmup).
double decay_multiplier(const DecaySpec& d, std::int64_t step, std::int64_t warmup_steps, std::int64_t total_steps);

/// Everything that fixes the LR of every step of one run.
struct LrSchedule {
  struct Peak {
    std::int64_t first_step = 0;
    double lr = 0;
    double base = 0;                 ///< base_t from first_step on (the warmup's start under `base`)
  };
  double base_lr = 0.1;
  double target_lr = 0.1;            ///< the peak LR of the first stage
  std::int64_t warmup_steps = 0;
  WarmupStart start = WarmupStart::base;
  DecaySpec decay;
  std::int64_t total_steps = 1;
  std::vector<Peak> peaks;           ///< per plan or lr_schedule stage, by first step; empty = target_lr throughout

  /// The peak (undecayed, post-warmup) LR in force at `step`.
  double peak_at(std::int64_t step) const;
  /// base_t: base_lr, or the lr_schedule stage's LR in force at `step`.
  double base_at(std::int64_t step) const;
  /// The LR of update number `step`.
  double at(std::int64_t step) const;
};

/// The schedule parameters as params.json gives them.
struct LrSpec {
  double base_lr = 0.1;
  LrRule rule = LrRule::linear;
  std::int64_t base_batch = 128;
  double warmup_epochs = 0;
  std::int64_t warmup_steps = 0;     ///< used when > 0 (instead of warmup_epochs)
  WarmupStart start = WarmupStart::base;
  Decay decay = Decay::constant;
  std::vector<double> milestones;    ///< epochs (step decay)
  double factor = 0.1;
  double floor = 0;
  double power = 2;
  bool smith = false;                ///< a Smith ramp turned the step decay into batch increases
  std::vector<LrStage> lr_stages;    ///< params.json lr_schedule: base LR by epoch (empty: base_lr)
};

/// The schedule of a run laid out by `plan` (epochs → steps through the plan's stages).
LrSchedule make_lr_schedule(const LrSpec& spec, const BatchPlan& plan);

/// A one-stage, constant-decay schedule with global batch `batch` and `steps_per_epoch`.
LrSchedule make_lr_schedule(double base_lr, LrRule rule, std::int64_t batch, std::int64_t base_batch,
                            double warmup_epochs, WarmupStart start, std::int64_t steps_per_epoch);

}  // namespace dlsweep::trainer::schedule
