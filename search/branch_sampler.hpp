// branch_sampler.hpp — the critical batch measured by branching (Merrill et al. 2025,
// common/branch_cbs.hpp) as a sampler: `search: {algorithm: branch}`.
//
// The plan, trial by trial (numbers in this order):
//  - trial 0: the trunk's first segment, [0, p_1), at the smallest batch B_1 of `batches`;
//  - for each point g = 1..M: first the trunk's next segment [p_g, p_{g+1}) from the checkpoint
//    of the segment before it (for g = M: [p_M, end), only with `trunk_to_end: true`: by
//    default the trunk stops at the last point, where nothing branches from it any more); then
//    point g's branches, each from that same checkpoint at p_g, at batch B_j and base LR x
//    factor, trained over [p_g, p_g + delta), in waves (seed by seed, LR factor by LR factor,
//    batch by batch within a wave):
//      `scan: upward` (the default): the first wave is B_1 and B_2 at `seeds` seeds; each next
//      wave waits for the point's earlier waves and is the next batch up at `seeds` seeds while
//      every batch so far may be within the tolerance (branch_point_answer's hi is the largest
//      batch tried) — the answer's walk stops at the first batch that is surely out, so the
//      batches above it would change nothing; then, while the point is undetermined, one more
//      seed of the reference and of each batch in (lo, hi] (the ones the noise leaves open), up
//      to max_seeds; then the scan may go on upward where hi moved. The trunk's segment
//      [p_1, p_2) comes right after trial 0, and segment [p_{g+1}, ...) right after point g's
//      first wave, so the trunk goes on while a point's later waves wait for their decisions.
//      `scan: all`: one wave, every batch; then, after the last point, rounds of extra seeds
//      (round r = 1, 2, ... while seeds + r <= max_seeds): once every earlier trial has ended,
//      one more seed of every batch and LR factor at each point whose answer the noise left
//      undetermined, in point order (every batch at once: for a cluster with free slots); a
//      round's trials wait for every trial before the round, not for each other.
// A trial may start once the trunk segment it branches from has ended and its wave is decided
// (ready()); the trunk segment's next trial starts first, so the trunk continues while its
// branches run. If a trunk segment ends without completing (failed, cancelled), nothing can
// branch from it: next() answers nullopt and the study creates no more trials.
//
// Params: the fixed ones, batch_size = the trial's batch, base_lr = fixed base_lr x factor
// (when the study fixes base_lr), and for a branch `branch_seed` = seed + 1 (dlsweep-train
// shuffles the data from the fork on by it; the trunk has none, so it trains as one
// uninterrupted run would). lineage(): PbtLink's JSON (member 0 = the trunk, each branch its
// own member; generation g; axis; start; end; parent) with "branch" = BranchRole's JSON, so
// the engine's checkpoint copy, DLSWEEP_STOP_AT and lineage records serve it as they serve pbt.
// Pure: a function of (options, fixed params, number, history).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/branch_cbs.hpp"
#include "search/sampler.hpp"

namespace dlsweep::search {

enum class BranchScan { upward, all };

struct BranchOptions {
  std::vector<double> points;          ///< ascending, > 0
  Axis axis = Axis::epoch;             ///< `by`: epoch | samples
  std::vector<std::int64_t> batches;   ///< ascending; [0] is the trunk's and the reference
  double delta = 0;                    ///< each branch's length on the axis
  double tolerance = 0.01;
  std::int64_t seeds = 2, max_seeds = 2;
  std::vector<double> lr_factors{1.0};
  double end = 0;                      ///< where the trunk ends (the trainer's epochs; `end` for programs)
  std::int64_t generations = 0;        ///< M + 1: the trunk's last segment (g = M) runs to `end`
  BranchScan scan = BranchScan::upward;
  bool trunk_to_end = false;           ///< the trunk's segment [p_M, end) runs too

  /// Reads points ([p1, ...] or {first, last}: every doubling), by, batches, delta, tolerance,
  /// seeds, max_seeds, lr_factors, end, generations, scan, trunk_to_end; checks them together.
  static BranchOptions read(OptionReader& r, const Space& space);
};

/// One trial of the plan.
struct BranchTrial {
  BranchRole role;
  std::int64_t member = 0, generation = 0;
  double start = 0, end = 0;
  std::optional<std::int64_t> parent;  ///< the trunk segment it continues or branches from
};

class BranchSampler final : public Sampler {
 public:
  BranchSampler(Space space, BranchOptions options);

  std::optional<Params> next(std::int64_t number, const History& history) override;
  bool ready(std::int64_t number, const History& history) const override;
  nlohmann::json lineage(std::int64_t number, const History& history) const override;
  /// The most trials it may run: every trunk segment, and max_seeds of every batch and LR
  /// factor at every point.
  std::optional<std::int64_t> size() const override;
  std::string name() const override { return "branch"; }

  const BranchOptions& options() const { return options_; }
  /// Trial `number`'s place in the plan (nullopt past it, or when its wave is not decided yet
  /// because a trial it depends on is still running).
  std::optional<BranchTrial> plan(std::int64_t number, const History& history) const;

 private:
  struct Walked;
  Walked walk(std::int64_t number, const History& history) const;

  Space space_;
  BranchOptions options_;
};

/// A finished branch's value as the answer counts it: the last report of a complete trial at
/// 90% of its length or later (branch_report_counts); nullopt otherwise.
std::optional<double> branch_value(const TrialRecord& t, const BranchTrial& planned, Axis axis);

}  // namespace dlsweep::search
