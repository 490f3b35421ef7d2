// results_frame.hpp — the data-frame shape of a study's results, as `dlsweep results
// --format csv|json` and `dlsweep export` write it for pandas/polars users: one row per
// trial, flat columns, parameters prefixed `params_` (Optuna's trials_dataframe does the
// same), start/end/duration from the events log; and the columns of the long-form curves.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "db/storage.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

/// Columns: trial, state, attempt, value, best_value, params_<name>... (every parameter of
/// any trial, by name; null where a trial lacks it), steps_to_target, samples_to_target,
/// time_to_target_s, samples_per_s, wall_s, started_at, ended_at, duration_s (unix seconds
/// and seconds; null when unknown), message. `with_params_object` adds `params` (the object)
/// after attempt, which `results --format json` has always had.
Rows results_frame(const std::vector<db::TrialSummary>& trials,
                   const std::map<std::int64_t, db::TrialTimes>& times_by_trial_id, bool with_params_object);

/// The parameters a results table shows: those whose value differs between trials, or that
/// some trials lack (a conditional `when:` parameter), in the order the trials first name
/// them. A parameter every trial has with one value is left out (it says nothing).
std::vector<std::string> varying_params(const std::vector<db::TrialSummary>& trials);

/// Appends one row per warm-start trial (`search.warm_start`: an earlier study's COMPLETE
/// trial that seeds the sampler, never run here) to `rows`, whatever its columns: trial (its
/// negative history number), state WARM, value and best_value/best (its objective value),
/// its params (params_<name>, <name> or params.<name> columns, and `params`), message (where
/// it came from), with several objectives each value under its column (`objective_columns`,
/// in the study's order); null elsewhere.
void append_warm_rows(Rows& rows, const std::vector<db::WarmStartRow>& warm,
                      const std::vector<std::string>& objective_columns = {});

/// A trial's batch over training, from the `batch_size` of its eval/final reports (in
/// order): the last one, and the mean over its updates, samples / steps of the last report
/// (what one fixed batch would have taken with as many updates; null before a step).
struct BatchSummary {
  double final_batch = 0;
  std::optional<double> mean_batch;
  bool varied = false;  ///< its reports name more than one batch (batch_ramp: a ramp or adaptive)
};
std::map<std::int64_t, BatchSummary> batch_summaries(
    const std::map<std::int64_t, std::vector<db::Storage::MetricPoint>>& batch_points);

/// Appends the columns batch_final and batch_mean (before `message` where `before_last`,
/// a table's last column) to the rows whose trial (column 0) has a summary; null elsewhere.
/// `number_of`: trial id -> trial number.
void append_batch_columns(Rows& rows, const std::map<std::int64_t, BatchSummary>& by_trial_id,
                          const std::map<std::int64_t, std::int64_t>& number_of, bool before_last);

/// Appends a `user_attrs_<key>` column per key any trial set (dlsweep_optuna's
/// set_user_attr: user_attrs.json of its directory; Optuna's trials_dataframe names them so),
/// keys sorted, before `message` where `before_last`; a value that is not a number, string or
/// boolean as its JSON text; null where a trial lacks the key. `by_number`: trial number ->
/// its attributes (an object). Nothing when no trial set any.
void append_user_attr_columns(Rows& rows, const std::map<std::int64_t, nlohmann::json>& by_number, bool before_last);

/// Header of the long-form curves: trial, attempt, seq, kind, step, epoch, samples, wall_s,
/// metric, value.
std::vector<std::string> curve_columns();
/// One curve point in the order of curve_columns().
std::vector<nlohmann::json> curve_cells(const db::CurvePoint& p);

}  // namespace dlsweep::orch
