// cmd_read.cpp — the read-only verbs: status, results, query, best. Each opens the
// database read-only (the orchestrator may be writing it at the same time, in WAL mode).
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/load.hpp"
#include "analysis/pooled_time.hpp"
#include "db/storage.hpp"
#include "orchestrator/best_schedule.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/pending_notice.hpp"
#include "orchestrator/results_frame.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

namespace {

using nlohmann::json;

struct Opened {
  std::unique_ptr<db::Storage> storage;
  OutputFormat format = OutputFormat::table;
};

Result<Opened> open_for_reading(const std::string& db, const std::string& format) {
  auto f = parse_output_format(format);
  if (!f) return std::unexpected(f.error());
  auto s = db::Storage::open_readonly(db);
  if (!s) return std::unexpected(s.error());
  return Opened{std::move(*s), *f};
}

Result<db::StudyRow> find_study(const db::Storage& storage, const std::string& name) {
  auto s = storage.find_study(name);
  if (!s) return std::unexpected(s.error());
  if (!*s) {
    std::string known;
    if (auto all = storage.list_studies(); all)
      for (const auto& st : *all) known += (known.empty() ? "" : ", ") + st.name;
    return fail("no study named '" + name + "'", "study",
                known.empty() ? "the database holds no study yet: run `dlsweep submit STUDY` first"
                              : "known studies: " + known);
  }
  return **s;
}

int report(const Error& e, int code) {
  fmt::print(stderr, "error: {}\n", e.message());
  return code;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json opt(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

int cmd_status(const StatusArgs& a) {
  auto o = open_for_reading(a.db, a.format);
  if (!o) return report(o.error(), exit_code::usage);
  Rows rows;
  if (a.study.empty()) {
    auto studies = o->storage->list_studies();
    if (!studies) return report(studies.error(), exit_code::runtime);
    rows.columns = {"study", "state", "trials", "WAITING", "QUEUED", "RUNNING", "COMPLETE", "PRUNED", "FAILED",
                    "CANCELLED"};
    for (const auto& st : *studies) {
      auto counts = o->storage->state_counts(st.id);
      if (!counts) return report(counts.error(), exit_code::runtime);
      std::vector<json> row = {st.name, st.state, 0};
      std::int64_t total = 0;
      for (std::size_t i = 3; i < rows.columns.size(); ++i) {
        std::int64_t n = 0;
        for (auto& [state, c] : *counts)
          if (state == rows.columns[i]) n = c;
        total += n;
        row.push_back(n);
      }
      row[2] = total;
      rows.rows.push_back(std::move(row));
    }
  } else {
    auto st = find_study(*o->storage, a.study);
    if (!st) return report(st.error(), exit_code::usage);
    auto trials = o->storage->summaries(st->id);
    if (!trials) return report(trials.error(), exit_code::runtime);
    // The scheduler's reason why a QUEUED trial's job waits, as the orchestrator last
    // recorded it (pending_notice.hpp): the latest job of the trial's current attempt.
    auto jobs = o->storage->list_jobs(st->id);
    if (!jobs) return report(jobs.error(), exit_code::runtime);
    std::map<std::pair<std::int64_t, int>, std::string> job_state;
    for (const auto& j : *jobs) job_state[{j.trial_id, j.attempt}] = j.state;
    // `value`: the objective's last value in the current attempt; `best`: its best so far
    // (what `best --by value` and the progress line's "best" rank by).
    rows.columns = {"trial", "state", "attempt", st->objective_metric, "best", "wall_s", "message"};
    for (const auto& t : *trials) {
      std::string message = t.message;
      if (auto js = job_state.find({t.trial_id, t.attempt}); t.state == "QUEUED" && js != job_state.end())
        if (auto why = pending_reason_of(js->second); why && !why->empty()) message = pending_status_message(*why, message);
      rows.rows.push_back({t.number, t.state, t.attempt, opt(t.value), opt(t.best_value), opt(t.wall_s), message});
    }
  }
  fmt::print("{}", render(rows, o->format, output_width(STDOUT_FILENO)));
  return exit_code::ok;
}

int cmd_results(const ResultsArgs& a) {
  auto o = open_for_reading(a.db, a.format);
  if (!o) return report(o.error(), exit_code::usage);
  auto st = find_study(*o->storage, a.study);
  if (!st) return report(st.error(), exit_code::usage);
  auto trials = o->storage->summaries(st->id);
  if (!trials) return report(trials.error(), exit_code::runtime);

  Rows rows;
  if (o->format != OutputFormat::table) {
    // CSV and JSON are data frames (results_frame.hpp): params_<name> columns, start/end.
    auto times = o->storage->trial_times(st->id);
    if (!times) return report(times.error(), exit_code::runtime);
    rows = results_frame(*trials, *times, /*with_params_object=*/o->format == OutputFormat::json);
  } else {
    // Tables name the parameters that vary, then the figures.
    std::vector<std::string> names;
    if (!trials->empty())
      for (auto& [k, v] : trials->front().params.items()) {
        bool varies = false;
        for (const auto& t : *trials)
          if (!t.params.contains(k) || t.params[k] != v) varies = true;
        if (varies) names.push_back(k);
      }
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
  fmt::print("{}", render(rows, o->format, output_width(STDOUT_FILENO)));
  return exit_code::ok;
}

int cmd_query(const QueryArgs& a) {
  auto o = open_for_reading(a.db, a.format);
  if (!o) return report(o.error(), exit_code::usage);
  auto r = o->storage->query(a.sql);
  if (!r) return report(r.error(), exit_code::usage);
  fmt::print("{}", render(Rows{r->columns, r->rows}, o->format, output_width(STDOUT_FILENO)));
  return exit_code::ok;
}

int cmd_best(const BestArgs& a) {
  if (a.explain) return cmd_best_explain(a);
  auto o = open_for_reading(a.db, a.format == "json" ? "json" : "table");
  if (!o) return report(o.error(), exit_code::usage);
  auto by = parse_best_by(a.by);
  if (!by) return report(by.error(), exit_code::usage);
  auto st = find_study(*o->storage, a.study);
  if (!st) return report(st.error(), exit_code::usage);
  auto trials = o->storage->summaries(st->id);
  if (!trials) return report(trials.error(), exit_code::runtime);
  // Times to target pooled over each trial's speed group (trainer studies; analysis/pooled_time.hpp).
  std::map<std::int64_t, PooledSeconds> pooled;
  const auto spec = json::parse(st->spec_json, nullptr, /*allow_exceptions=*/false);
  const bool trainer = spec.is_object() && spec.contains("trial") && spec["trial"].is_object() &&
                       spec["trial"].contains("trainer");
  if (trainer && (*by == BestBy::time || *by == BestBy::automatic)) {
    auto study = analysis::load_study(*o->storage, st->name);
    if (!study) return report(study.error(), exit_code::runtime);
    const auto times = analysis::pooled_times_to_target(*study);
    for (std::size_t i = 0; i < times.size(); ++i)
      if (times[i]) pooled[study->trials[i].number] = {times[i]->seconds, times[i]->trials};
  }
  auto outcome = choose_best(*trials, st->objective_metric, st->objective_mode, st->objective_target, *by, pooled);
  const std::string left_out = outcome.left_out_text();
  if (!outcome.choice) {
    std::string why;
    if (outcome.eligible == 0 && trials->empty()) why = "it has no trial yet";
    else if (outcome.eligible == 0)
      why = st->state == "RUNNING" ? "no trial has completed yet" : "no trial completed";
    else if ((*by == BestBy::time || *by == BestBy::steps) && st->objective_target)
      why = fmt::format("no complete trial reached the target {:g} (`--by value` ranks them by {})",
                        *st->objective_target, st->objective_metric);
    else
      why = fmt::format("no complete trial has a value for {}", st->objective_metric);
    fmt::print(stderr, "study {}: nothing to recommend: {}{}\n", st->name, why,
               left_out.empty() ? "" : "; " + left_out);
    return exit_code::trials_failed;
  }
  const BestChoice* best = &*outcome.choice;
  const auto& t = (*trials)[best->index];
  json left = json::object();
  for (const auto& [state, n] : outcome.left_out) left[state] = n;
  static const char* crit[] = {"auto", "time-to-target", "steps-to-target", "best value"};
  if (o->format == OutputFormat::json) {
    json j{{"study", st->name},
           {"criterion", crit[static_cast<int>(best->criterion)]},
           {"trial", t.number},
           {"params", t.params},
           {"value", opt(t.value)},
           {"best_value", opt(t.best_value)},
           {"steps_to_target", opt(t.steps_to_target)},
           {"time_to_target_s", opt(t.time_to_target_s)},
           {"time_to_target_pooled_s", pooled.contains(t.number) && best->criterion == BestBy::time
                                           ? json(pooled.at(t.number).seconds) : json(nullptr)},
           {"pooled_trials", pooled.contains(t.number) && best->criterion == BestBy::time
                                 ? json(pooled.at(t.number).trials) : json(nullptr)},
           {"explanation", best->explanation},
           {"eligible", outcome.eligible},
           {"left_out", left}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("best schedule of {} by {}: trial {}\n", st->name, crit[static_cast<int>(best->criterion)], t.number);
    for (const auto& line : best->explanation) fmt::print("  - {}\n", line);
    if (!left_out.empty()) fmt::print("  - {}\n", left_out);
    fmt::print("  params: {}\n", params_brief(t.params));  // 4 significant digits; --format json: whole
  }
  return exit_code::ok;
}

}  // namespace dlsweep::orch
