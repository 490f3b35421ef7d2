// explain.hpp — the evidence behind `dlsweep best --explain` (docs/math.md#best-explained):
// the winner among COMPLETE trials (by seed-group mean, so a lucky seed does not win over a
// better mean), its regime, B_crit with its interval, runner-ups within seed noise, its
// learning/parallel/time-to-solution speedups, the scaling efficiency over ranks/threads
// when the study varied them, the noise scale at target, and what was excluded and why. The
// winner and the runner-ups come from the one ranking (analysis/ranking.hpp), the same as
// plain `best`'s and the report's. Pure: a StudyData in, an Explanation out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/batch_model.hpp"
#include "analysis/noise.hpp"
#include "analysis/ranking.hpp"
#include "analysis/seed_groups.hpp"
#include "analysis/speedup.hpp"
#include "analysis/target_table.hpp"

namespace dlsweep::analysis {

struct Contender {
  std::vector<std::int64_t> trials;  ///< trial numbers of the seed group, in trial order
  std::int64_t best_trial = 0;       ///< its best seed: the trial plain `best` names
  std::string config;                ///< describe_params of the group
  std::int64_t batch = 0;
  std::size_t n = 0;                 ///< seeds (group members)
  double mean = 0;                   ///< of the criterion (seconds — pooled for the trainer —, steps or value)
  double std = 0;                    ///< over seeds, of the trials' own readings
  double delta_rel = 0;              ///< (mean - winner's mean) / winner's mean (runner-ups)
};

struct Explanation {
  std::string study, metric, mode;
  std::optional<double> target;
  Criterion criterion = Criterion::value;
  bool final = false;                       ///< ranked by the final report (objective.rank_by: final)
  std::size_t complete = 0;                 ///< COMPLETE trials
  std::size_t reached = 0;                  ///< of which reached the target
  /// COMPLETE trials whose time to target is a median over several trials of their speed group
  /// (analysis/pooled_time.hpp); by time, the ranking uses those medians.
  std::size_t pooled_over_several = 0;
  std::optional<Contender> winner;          ///< nullopt: nothing to recommend
  std::optional<BatchFit> fit;
  std::string fit_refusal;                  ///< why there is no fit (empty when there is one)
  std::optional<Regime> regime;             ///< of the winner's batch; only when fit->determined
  /// Pooled seed std of the criterion, on log scale for time/steps, raw for value (nullopt:
  /// no configuration has several seeds, so seed noise is unknown).
  std::optional<double> seed_log_sd;
  std::vector<Contender> runner_ups;        ///< within seed noise (or the next best 2 when unknown)
  bool runner_ups_within_noise = false;     ///< runner_ups are those within noise
  std::optional<LearningSpeedup> speedup;   ///< of the winner's batch vs the smallest batch
  std::vector<ScalingTable> scaling;        ///< strong/weak scaling over ranks and threads (when searched)
  NoiseSummary noise;                       ///< ratio_to_b_crit only when B_crit is determined
  bool noise_reported = false;              ///< some trial reported grad_noise_scale
  TargetTable table;
  std::vector<Exclusion> excluded;          ///< every trial that could not win, and why

  /// The human text, one sentence per line, most important first.
  std::vector<std::string> lines() const;
};

Explanation explain_best(const StudyData& study, RankBy by, const FitOptions& fit = {});

}  // namespace dlsweep::analysis
