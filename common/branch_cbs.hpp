// branch_cbs.hpp — the critical batch measured by branching (Merrill et al. 2025, "Critical
// Batch Size Revisited", arXiv 2505.23971), as data and as pure arithmetic. Shared by the
// branch sampler (search/branch_sampler: which points need more seeds), `best` of a branch
// study (orchestrator/cmd_best_branch) and the report's card.
//
// A branching study (`search: {algorithm: branch}`) trains one trunk at the smallest batch
// B_1 of `batches`, cut into segments at the points p_1 < ... < p_M on the axis (epoch or
// samples: the comparison is at equal samples, never at equal steps). At each point, branches
// start from the trunk's checkpoint there, one per (batch B_j, LR factor f, seed s), and each
// trains Δ (`delta`) further on the axis. Its value is the objective's last report at or past
// p + Δ (its final record). Per point:
//   - per batch, per LR factor: the mean and sample standard deviation over seeds;
//   - per batch: the LR factor with the best mean (the LR grid, when asked), its mean m_j,
//     sd s_j and seed count n_j;
//   - the reference m_1 (the smallest batch); worse_j = m_j - m_1 for a minimised objective,
//     m_1 - m_j for a maximised one; the tolerance τ = tolerance · |m_1|;
//   - the standard error of the difference se_j = sqrt(s_j²/n_j + s_1²/n_1), and z = 2;
//   - B_j is surely within when worse_j + z·se_j <= τ, possibly within when worse_j - z·se_j <= τ;
//   - the interval [lo, hi]: lo = the largest B_j such that every B_i <= B_j is surely within,
//     hi = the largest such that every one is possibly within (B_1 always counts as within);
//   - determined when lo == hi; `capped` when hi is the largest batch tried (the critical
//     batch is at least that: branch larger batches to know more).
// A point with fewer than 2 seeds on a batch has no noise estimate: it is undetermined.
// The schedule that follows the curve: a batch_ramp whose stage at p_g is lo_g, made
// non-decreasing by the suffix minimum (a stage never exceeds a later point's lo), merged
// where consecutive stages agree; it starts at 0 with the trunk's batch B_1.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep {

/// A branch trial's role, the "branch" member of its `pbt` event's link (common/pbt_link.hpp):
/// {"role": "trunk"|"branch", "point": g (1-based index into the points; a trunk segment:
/// the index of the point it starts at, 0 for the first), "at": p_g, "batch", "lr_factor",
/// "seed" (0-based), "round" (0 = the base plan, r >= 1 = the r-th round of extra seeds)}.
struct BranchRole {
  bool trunk = false;
  std::int64_t point = 0;
  double at = 0;
  std::int64_t batch = 0;
  double lr_factor = 1;
  std::int64_t seed = 0;
  std::int64_t round = 0;

  static std::optional<BranchRole> from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

/// Whether a report at `at` on the axis is a branch's value: the trainer ends a branch at the
/// whole step nearest its end (a fraction of a step short of it at most), so a report counts
/// from 90% of the branch's length [start, end) on. The value is the last such report.
inline bool branch_report_counts(double at, double start, double end) { return at >= start + 0.9 * (end - start) - 1e-9; }

/// One finished branch's measurement.
struct BranchValue {
  std::int64_t batch = 0;
  double lr_factor = 1;
  std::int64_t seed = 0;
  double value = 0;
  std::int64_t trial = -1;  ///< the trial number (evidence), -1 when unknown
};

struct BranchRule {
  std::vector<std::int64_t> batches;  ///< ascending; batches[0] is the reference (the trunk's)
  double tolerance = 0.01;
  bool maximize = false;
  double z = 2;
};

/// Per batch at one point: the LR factor kept and its statistics over seeds.
struct BatchStat {
  std::int64_t batch = 0;
  double lr_factor = 1;
  double mean = 0, sd = 0;
  std::int64_t n = 0;          ///< seeds measured at this LR factor
  double worse = 0;            ///< worse_j (0 for the reference)
  double se = 0;               ///< se_j (0 for the reference)
  bool surely = false, possibly = false;
  std::vector<std::int64_t> trials;  ///< the trials behind `mean`
};

struct PointAnswer {
  std::int64_t point = 0;  ///< 1-based
  double at = 0;           ///< p on the study's axis
  std::vector<BatchStat> batches;  ///< measured batches, ascending (a batch with no value is absent)
  std::optional<std::int64_t> lo, hi;  ///< the interval; nullopt when the reference is unmeasured
  bool determined = false;
  bool capped = false;
  std::int64_t min_seeds = 0;  ///< the fewest seeds of the batches up to the one that ended the hi walk (0: one is missing)
  std::string why;         ///< one line: "256 (undetermined: 512 is within 1% only by noise)"

  nlohmann::json to_json() const;
};

/// The answer at one point from its finished branches (any order; missing ones allowed).
PointAnswer branch_point_answer(std::int64_t point, double at, const std::vector<BranchValue>& values,
                                const BranchRule& rule);

/// One stage of the schedule that follows the curve: from `at` on, `batch`.
struct RampStage {
  double at = 0;
  std::int64_t batch = 0;
};

/// The batch_ramp that follows the curve (see the file comment): starts {0, trunk_batch}.
/// Points without a lower end (unmeasured) are skipped.
std::vector<RampStage> branch_schedule(const std::vector<PointAnswer>& points, std::int64_t trunk_batch);

/// "0:64,0.5:128,2:512" (dlsweep-train's batch_ramp form).
std::string ramp_text(const std::vector<RampStage>& stages);

}  // namespace dlsweep
