// study_data.hpp — the plain values every analysis function works on: one study's trials,
// each with its parameters, its outcome and its evaluation curve. Nothing here does I/O;
// analysis/load.hpp fills these structs from the database (the only file of analysis/ that
// touches db/), tests and the report build them by hand.
//
// Public API of analysis/ (value-based: structs in, structs out; no globals, no I/O):
//   study_data.hpp   TrialData, StudyData            (inputs)
//   stats.hpp        Stat, summarize, percentile     (mean/std/n)
//   seed_groups.hpp  group_by_seed                   (trials differing only in `seed`)
//   target_table.hpp target_table                    (steps/samples/time to target per batch)
//   batch_model.hpp  fit_batch_model, classify       (S(B) = S_min(1 + B_crit/B), regimes, determined)
//   noise.hpp        noise_scales, summarize_noise   (B_simple over training and at target)
//   speedup.hpp      learning_speedups, scaling_tables, time_to_solution
//   pooled_time.hpp  pooled_times_to_target          (time to target over trials of one speed)
//   goodput.hpp      fit_step_time, predict_time_to_target, make_plan (Pollux-style plan)
//   ranking.hpp      rank, best_value_order          (the winner and the order: best, --explain, report)
//   grouped_fit.hpp  fit_by_group                    (S(B), B_crit per value of a parameter: --group-by)
//   explain.hpp      explain_best                    (what `dlsweep best --explain` prints)
//   to_json.hpp      to_json(...) for every result struct (--format json, the report)
//   load.hpp         load_study(storage, name)       (the db/ read side)
// The math is defined in docs/math.md (the section each header cites).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/multi_objective.hpp"

namespace dlsweep::analysis {

/// One evaluation record of a trial (kind eval or final), as the trainer reported it.
/// Interval timings (t_*) cover the training steps since the previous evaluation record.
struct EvalPoint {
  bool final = false;           ///< a `final` record (it repeats the last eval's interval metrics)
  std::int64_t step = 0;        ///< updates done when the record was written
  double epoch = 0;
  std::int64_t samples = 0;     ///< training samples consumed so far
  double wall_s = 0;            ///< seconds since the trial started
  std::optional<double> value;  ///< the study's objective metric
  std::optional<double> noise_scale;    ///< grad_noise_scale (B_simple, moving average)
  std::optional<double> grad_norm_sq;   ///< |G|^2 estimate
  std::optional<double> trace_sigma;    ///< tr(Sigma) estimate
  std::optional<double> t_compute_s;    ///< time_compute_s of the interval (mean over ranks)
  std::optional<double> t_data_s;       ///< time_data_s of the interval
  std::optional<double> t_allreduce_s;  ///< time_allreduce_exposed_s of the interval
  std::optional<double> t_eval_s;       ///< time_eval_s: this evaluation
  std::optional<double> samples_per_s;  ///< training throughput of the interval
  std::optional<double> lr;             ///< LR of the last update
  std::optional<double> batch;          ///< global batch of the last update
};

/// One trial: identity, parameters, outcome, curve.
struct TrialData {
  std::int64_t number = 0;      ///< the study's trial number (what users see)
  std::string state;            ///< "COMPLETE", "FAILED", "PRUNED", "RUNNING", ...
  std::string message;          ///< last reason recorded (failure text, prune reason)
  nlohmann::json params = nlohmann::json::object();  ///< name -> value, as sampled/fixed
  std::int64_t batch = 0;       ///< params.batch_size (0 when absent)
  bool batch_ramp = false;      ///< params.batch_ramp is set (no single batch size)
  int ranks = 1;                ///< params.ranks, else the study's trial.ranks, else 1
  int threads = 1;              ///< params.threads, else 1
  std::optional<std::int64_t> steps_to_target;
  std::optional<std::int64_t> samples_to_target;
  std::optional<double> time_to_target_s;
  std::optional<double> best_value;     ///< best objective over its eval/final records
  std::optional<double> samples_per_s;  ///< last reported throughput
  /// When it entered its final state (unix s, from the events log; none while unfinished):
  /// exact ties of value go to the trial that finished first, as Optuna's best_trial.
  std::optional<double> ended_at;
  std::vector<EvalPoint> curve;         ///< eval/final records of the current attempt, in order
  /// Every reported metric and the derived figures: what several objectives and the
  /// constraints read (common/multi_objective.hpp). Filled by load_study.
  TrialFigures figures;

  bool complete() const { return state == "COMPLETE"; }
  /// The objective's last reported value (what a PBT interval is ranked by), else best_value.
  std::optional<double> last_value() const {
    for (auto p = curve.rbegin(); p != curve.rend(); ++p)
      if (p->value) return p->value;
    return best_value;
  }
  bool reached() const { return steps_to_target.has_value() && time_to_target_s.has_value(); }
  /// The objective's last report of the current attempt (no fallback): what `rank_by: final` ranks by.
  std::optional<double> final_value() const {
    for (auto p = curve.rbegin(); p != curve.rend(); ++p)
      if (p->value) return p->value;
    return std::nullopt;
  }
};

struct StudyData {
  std::string name;
  std::string metric;           ///< objective metric
  std::string mode = "max";     ///< "max" | "min"
  std::optional<double> target;
  std::vector<TrialData> trials;
  bool trainer = false;         ///< trials run dlsweep's trainer (its parameter names are known)
  /// Every objective (the first is metric/mode above); two or more: `best` names the Pareto
  /// front (analysis/front.hpp). Empty is read as the one objective above.
  std::vector<ObjectiveDef> objectives;
  std::vector<ConstraintDef> constraints;  ///< the study's `constraints` (none: empty)
  /// `objective.rank_by: final`: a trial's value is its final report (TrialData::final_value),
  /// not its best (best_value). Every ranking by value reads objective_value().
  bool rank_final = false;
  bool multi_objective() const { return objectives.size() > 1; }
  /// The value a trial ranks by (rank_by): its best report, or its final one.
  std::optional<double> objective_value(const TrialData& t) const { return rank_final ? t.final_value() : t.best_value; }
};

/// The trial's parameters without `seed`: trials with equal keys are seed replicates.
nlohmann::json config_key(const nlohmann::json& params);

/// "batch_size=256, base_lr=0.1" over the parameters that vary between `trials` (all of
/// them when none varies); stable order (by name).
std::string describe_params(const nlohmann::json& params, const std::vector<TrialData>& trials);

}  // namespace dlsweep::analysis
