#include "orchestrator/results_frame.hpp"

#include <algorithm>
#include <set>
#include <string>

namespace dlsweep::orch {

namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

Rows results_frame(const std::vector<db::TrialSummary>& trials,
                   const std::map<std::int64_t, db::TrialTimes>& times_by_trial_id, bool with_params_object) {
  std::set<std::string> names;  // ordered: the columns do not depend on which trial came first
  for (const auto& t : trials)
    for (auto& [k, v] : t.params.items()) names.insert(k);

  Rows rows;
  rows.columns = {"trial", "state", "attempt"};
  if (with_params_object) rows.columns.push_back("params");
  rows.columns.insert(rows.columns.end(), {"value", "best_value"});
  for (const auto& n : names) rows.columns.push_back("params_" + n);
  rows.columns.insert(rows.columns.end(), {"steps_to_target", "samples_to_target", "time_to_target_s",
                                           "samples_per_s", "wall_s", "started_at", "ended_at", "duration_s",
                                           "message"});
  for (const auto& t : trials) {
    std::vector<json> row = {t.number, t.state, t.attempt};
    if (with_params_object) row.push_back(t.params);
    row.insert(row.end(), {opt(t.value), opt(t.best_value)});
    for (const auto& n : names) row.push_back(t.params.contains(n) ? t.params[n] : json(nullptr));
    db::TrialTimes times;
    if (auto it = times_by_trial_id.find(t.trial_id); it != times_by_trial_id.end()) times = it->second;
    std::optional<double> duration;
    if (times.started_at && times.ended_at && *times.ended_at >= *times.started_at)
      duration = *times.ended_at - *times.started_at;
    row.insert(row.end(), {opt(t.steps_to_target), opt(t.samples_to_target), opt(t.time_to_target_s),
                           opt(t.samples_per_s), opt(t.wall_s), opt(times.started_at), opt(times.ended_at),
                           opt(duration), t.message});
    rows.rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> varying_params(const std::vector<db::TrialSummary>& trials) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& t : trials)
    for (auto& [k, v] : t.params.items()) {
      if (!seen.insert(k).second) continue;
      const auto differs = [&](const db::TrialSummary& o) { return !o.params.contains(k) || o.params[k] != v; };
      if (std::any_of(trials.begin(), trials.end(), differs)) names.push_back(k);
    }
  return names;
}

void append_warm_rows(Rows& rows, const std::vector<db::WarmStartRow>& warm,
                      const std::vector<std::string>& objective_columns) {
  for (const auto& w : warm) {
    std::vector<json> row;
    for (const auto& c : rows.columns) {
      const auto k = std::find(objective_columns.begin(), objective_columns.end(), c) - objective_columns.begin();
      if (std::size_t(k) < objective_columns.size()) {
        row.push_back(std::size_t(k) < w.values.size() ? json(w.values[std::size_t(k)]) : json(nullptr));
        continue;
      }
      std::string p = c.starts_with("params_") ? c.substr(7) : c.starts_with("params.") ? c.substr(7) : c;
      if (c == "trial") row.push_back(w.number);
      else if (c == "state") row.push_back("WARM");
      else if (c == "value" || c == "best_value" || c == "best") row.push_back(w.value);
      else if (c == "params") row.push_back(w.params);
      else if (c == "message")
        row.push_back("warm start (not run): trial " + std::to_string(w.source_number) + " of study '" + w.source_study +
                      "' in " + w.source_db);
      else if (w.params.contains(p)) row.push_back(w.params[p]);
      else row.push_back(nullptr);
    }
    rows.rows.push_back(std::move(row));
  }
}

std::map<std::int64_t, BatchSummary> batch_summaries(
    const std::map<std::int64_t, std::vector<db::Storage::MetricPoint>>& batch_points) {
  std::map<std::int64_t, BatchSummary> out;
  for (const auto& [id, points] : batch_points) {
    if (points.empty()) continue;
    BatchSummary b;
    const auto& last = points.back();
    b.final_batch = last.value;
    if (last.step > 0) b.mean_batch = static_cast<double>(last.samples) / static_cast<double>(last.step);
    for (const auto& p : points) b.varied = b.varied || p.value != points.front().value;
    out[id] = b;
  }
  return out;
}

void append_batch_columns(Rows& rows, const std::map<std::int64_t, BatchSummary>& by_trial_id,
                          const std::map<std::int64_t, std::int64_t>& number_of, bool before_last) {
  std::map<std::int64_t, const BatchSummary*> by_number;
  for (const auto& [id, b] : by_trial_id)
    if (auto n = number_of.find(id); n != number_of.end()) by_number[n->second] = &b;
  const auto at = before_last && !rows.columns.empty() ? rows.columns.size() - 1 : rows.columns.size();
  rows.columns.insert(rows.columns.begin() + static_cast<std::ptrdiff_t>(at), {"batch_final", "batch_mean"});
  for (auto& row : rows.rows) {
    const auto it = row.empty() || !row[0].is_number_integer() ? by_number.end() : by_number.find(row[0].get<std::int64_t>());
    const bool known = it != by_number.end();
    const json cells[] = {known ? json(it->second->final_batch) : json(nullptr),
                          known && it->second->mean_batch ? json(*it->second->mean_batch) : json(nullptr)};
    const auto pos = before_last && !row.empty() ? row.size() - 1 : row.size();
    row.insert(row.begin() + static_cast<std::ptrdiff_t>(pos), std::begin(cells), std::end(cells));
  }
}

void append_user_attr_columns(Rows& rows, const std::map<std::int64_t, nlohmann::json>& by_number, bool before_last) {
  std::set<std::string> keys;
  for (const auto& [n, attrs] : by_number)
    if (attrs.is_object())
      for (const auto& [k, v] : attrs.items()) keys.insert(k);
  if (keys.empty()) return;
  const auto at = before_last && !rows.columns.empty() ? rows.columns.size() - 1 : rows.columns.size();
  std::vector<std::string> names;
  for (const auto& k : keys) names.push_back("user_attrs_" + k);
  rows.columns.insert(rows.columns.begin() + static_cast<std::ptrdiff_t>(at), names.begin(), names.end());
  for (auto& row : rows.rows) {
    const auto it = row.empty() || !row[0].is_number_integer() ? by_number.end() : by_number.find(row[0].get<std::int64_t>());
    std::vector<json> cells;
    for (const auto& k : keys) {
      if (it == by_number.end() || !it->second.is_object() || !it->second.contains(k) || it->second[k].is_null()) {
        cells.emplace_back(nullptr);
        continue;
      }
      const json& v = it->second[k];
      cells.push_back(v.is_number() || v.is_string() || v.is_boolean() ? v : json(v.dump()));
    }
    const auto pos = before_last && !row.empty() ? row.size() - 1 : row.size();
    row.insert(row.begin() + static_cast<std::ptrdiff_t>(pos), cells.begin(), cells.end());
  }
}

std::vector<std::string> curve_columns() {
  return {"trial", "attempt", "seq", "kind", "step", "epoch", "samples", "wall_s", "metric", "value"};
}

std::vector<nlohmann::json> curve_cells(const db::CurvePoint& p) {
  return {p.number, p.attempt, p.seq, p.kind, p.step, p.epoch, p.samples, p.wall_s, p.name, opt(p.value)};
}

}  // namespace dlsweep::orch
