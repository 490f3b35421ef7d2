// branch_sampler.hpp — the critical batch measured by branching (Merrill et al. 2025,
// common/branch_cbs.hpp) as a sampler: `search: {algorithm: branch}`.
//
// The plan, trial by trial (numbers in this order):
//  - trial 0: the trunk's first segment, [0, p_1), at the smallest batch B_1 of `batches`;
//  - for each point g = 1..M: first the trunk's next segment [p_g, p_{g+1}) ([p_M, end) for the
//    last), from the checkpoint of segment g-1; then the branches at p_g, seed by seed (0 ..
//    seeds-1), LR factor by LR factor, batch by batch: each from that same checkpoint, at batch
//    B_j and base LR x factor, trained over [p_g, p_g + delta);
//  - then rounds of extra seeds (round r = 1, 2, ... while seeds + r <= max_seeds): once every
//    earlier trial has ended, one more seed of every batch and LR factor at each point whose
//    answer the noise left undetermined (branch_point_answer), in point order. No such point:
//    the study is done.
// A trial of group g may start once the trunk segment g-1 has ended (ready()); the trunk
// segment's next trial starts first, so the trunk continues while its branches run. If a trunk
// segment ends without completing (failed, cancelled), nothing can branch from it: next()
// answers nullopt and the study creates no more trials.
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

struct BranchOptions {
  std::vector<double> points;          ///< ascending, > 0
  Axis axis = Axis::epoch;             ///< `by`: epoch | samples
  std::vector<std::int64_t> batches;   ///< ascending; [0] is the trunk's and the reference
  double delta = 0;                    ///< each branch's length on the axis
  double tolerance = 0.01;
  std::int64_t seeds = 2, max_seeds = 2;
  std::vector<double> lr_factors{1.0};
  double end = 0;                      ///< where the trunk ends (the trainer's epochs; `end` for programs)
  std::int64_t generations = 0;        ///< trunk segments: M + 1

  /// Reads points ([p1, ...] or {first, last}: every doubling), by, batches, delta, tolerance,
  /// seeds, max_seeds, lr_factors, end, generations; checks them together.
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
  /// The most trials it may run: the base plan and every round of extra seeds at every point.
  std::optional<std::int64_t> size() const override;
  std::string name() const override { return "branch"; }

  const BranchOptions& options() const { return options_; }
  /// How many trials the base plan has: 1 + M (1 + seeds x factors x batches).
  std::int64_t base_size() const;
  /// Trial `number`'s place in the plan (nullopt past it, or when a round of extra seeds is
  /// not decided yet because an earlier trial is still running).
  std::optional<BranchTrial> plan(std::int64_t number, const History& history) const;
  /// The number of the trunk segment that ends at point g (g = 1..M): segment g-1.
  std::int64_t trunk_segment_number(std::int64_t g) const;

 private:
  Space space_;
  BranchOptions options_;
};

/// A finished branch's value as the answer counts it: the last report of a complete trial at
/// 90% of its length or later (branch_report_counts); nullopt otherwise.
std::optional<double> branch_value(const TrialRecord& t, const BranchTrial& planned, Axis axis);

}  // namespace dlsweep::search
