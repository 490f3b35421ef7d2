// cmd_results.cpp — `dlsweep results STUDY`: per-trial params, state, value, steps/time to
// target and samples/s, as a table, CSV or JSON.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/front.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/cmd_best_pbt.hpp"
#include "analysis/load.hpp"
#include "common/multi_objective.hpp"
#include "db/storage.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/results_frame.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

int cmd_results(const ResultsArgs& a) {
  if (a.format == "parquet") return print_error(parquet_unavailable(), exit_code::usage);
  auto o = open_for_reading(a.db, a.format);
  if (!o) return print_error(o.error(), exit_code::usage);
  auto st = find_study(*o->storage, a.study);
  if (!st) return print_error(st.error(), exit_code::usage);
  auto trials = o->storage->summaries(st->id);
  if (!trials) return print_error(trials.error(), exit_code::runtime);

  Rows rows;
  if (o->format != OutputFormat::table) {
    // CSV and JSON are data frames (results_frame.hpp): params_<name> columns, start/end.
    auto times = o->storage->trial_times(st->id);
    if (!times) return print_error(times.error(), exit_code::runtime);
    rows = results_frame(*trials, *times, /*with_params_object=*/o->format == OutputFormat::json);
  } else {
    // Tables name the parameters that vary (conditional ones included), then the figures.
    const auto names = varying_params(*trials);
    // A parameter named like a fixed column ("state", "value") is shown as params.NAME.
    // Tables use shorter names for the figures, so that a line fits a terminal.
    const std::vector<std::string> fixed_after = {"value", "best", "tgt_steps", "tgt_time_s", "samples/s", "message"};
    auto is_fixed = [&](const std::string& n) {
      return n == "trial" || n == "state" || std::find(fixed_after.begin(), fixed_after.end(), n) != fixed_after.end();
    };
    rows.columns = {"trial", "state"};
    for (const auto& n : names) rows.columns.push_back(is_fixed(n) ? "params." + n : n);
    rows.columns.insert(rows.columns.end(), fixed_after.begin(), fixed_after.end());
    for (const auto& t : *trials) {
      std::vector<json> row = {t.number, t.state};
      for (const auto& n : names) row.push_back(t.params.contains(n) ? t.params[n] : json(nullptr));
      for (json v : {opt(t.value), opt(t.best_value), opt(t.steps_to_target), opt(t.time_to_target_s),
                     opt(t.samples_per_s)})
        row.push_back(v);
      row.push_back(t.message);
      rows.rows.push_back(std::move(row));
    }
  }
  // Several objectives: each objective's value and whether the trial is on the Pareto front
  // (analysis/front.hpp); constraints: whether it satisfies them.
  auto study = analysis::load_study(*o->storage, st->name);
  if (!study) return print_error(study.error(), exit_code::runtime);
  if (study->multi_objective() || !study->constraints.empty()) {
    const auto front = analysis::pareto_front(*study);
    std::map<std::int64_t, std::size_t> at;
    for (std::size_t i = 0; i < study->trials.size(); ++i) at[study->trials[i].number] = i;
    const bool table = o->format == OutputFormat::table;
    const std::size_t number_col = 0;  // "trial" in every format
    if (study->multi_objective()) {
      for (const auto& ob : front.objectives) rows.columns.push_back(table ? ob.metric : "objective_" + ob.metric);
      rows.columns.push_back(table ? "front" : "pareto_front");
    }
    if (!study->constraints.empty()) rows.columns.push_back("feasible");
    for (auto& row : rows.rows) {
      const auto it = row[number_col].is_number_integer() ? at.find(row[number_col].get<std::int64_t>()) : at.end();
      const bool known = it != at.end();
      if (study->multi_objective()) {
        // Each objective's own value: a trial missing one (time_to_target_s of a trial that
        // never reached the target) still shows the others it has.
        for (const auto& ob : front.objectives) {
          const auto v = known ? figure(study->trials[it->second].figures, ob.metric, ob.maximize, /*best=*/true)
                               : std::nullopt;
          row.push_back(v && std::isfinite(*v) ? json(*v) : json(nullptr));
        }
        const bool on = known && front.on_front(it->second);
        row.push_back(table ? json(on ? "*" : "") : json(on));
      }
      if (!study->constraints.empty()) {
        const bool ok = known && front.violation[it->second] <= 0;
        row.push_back(table ? json(ok ? "yes" : "no") : json(ok));
      }
    }
  }
  // Population-based training: each trial's link in its member's lineage (its `pbt` event):
  // a brief cell in tables; member, generation, parent and exploit_from columns in CSV/JSON.
  auto pbt = load_pbt(*o->storage, *st);
  if (!pbt) return print_error(pbt.error(), exit_code::runtime);
  if (*pbt) {
    const bool table = o->format == OutputFormat::table;
    if (table) rows.columns.insert(rows.columns.end() - 1, "pbt");
    else
      for (const char* c : {"pbt_member", "pbt_generation", "pbt_parent", "pbt_exploit_from"}) rows.columns.push_back(c);
    for (auto& row : rows.rows) {
      const auto l = row[0].is_number_integer() ? (**pbt).links.find(row[0].get<std::int64_t>()) : (**pbt).links.end();
      const bool known = l != (**pbt).links.end();
      if (table) {
        row.insert(row.end() - 1, known ? json(l->second.brief()) : json(nullptr));
        continue;
      }
      auto opt_int = [](const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); };
      row.push_back(known ? json(l->second.member) : json(nullptr));
      row.push_back(known ? json(l->second.generation) : json(nullptr));
      row.push_back(known ? opt_int(l->second.parent) : json(nullptr));
      row.push_back(known ? opt_int(l->second.exploit_from) : json(nullptr));
    }
  }
  // Trials whose batch changed over training (batch_ramp: adaptive or a ramp): the final batch
  // and the mean over their updates. Studies of fixed batches keep their columns.
  auto batch_points = o->storage->metric_points(st->id, "batch_size");
  if (!batch_points) return print_error(batch_points.error(), exit_code::runtime);
  const auto batches = batch_summaries(*batch_points);
  if (std::any_of(batches.begin(), batches.end(), [](const auto& b) { return b.second.varied; })) {
    std::map<std::int64_t, std::int64_t> number_of;
    for (const auto& t : *trials) number_of[t.trial_id] = t.number;
    append_batch_columns(rows, batches, number_of, /*before_last=*/o->format == OutputFormat::table);
  }
  // set_user_attr's attributes (user_attrs.json of each trial directory): user_attrs_<key>.
  auto attrs = read_user_attrs(*o->storage, st->id);
  if (!attrs) return print_error(attrs.error(), exit_code::runtime);
  append_user_attr_columns(rows, *attrs, /*before_last=*/o->format == OutputFormat::table);
  // search.warm_start: the earlier studies' trials that seeded the sampler, marked WARM.
  auto warm = o->storage->warm_start_trials(st->id);
  if (!warm) return print_error(warm.error(), exit_code::runtime);
  std::vector<std::string> objective_columns;
  if (study->multi_objective())
    for (const auto& ob : study->objectives)
      objective_columns.push_back(o->format == OutputFormat::table ? ob.metric : "objective_" + ob.metric);
  append_warm_rows(rows, *warm, objective_columns);
  fmt::print("{}", render(rows, o->format, output_width(STDOUT_FILENO)));
  return exit_code::ok;
}

}  // namespace dlsweep::orch
