// cmd_best.cpp — `dlsweep best STUDY [--explain]`: the recommended schedule and why; with
// --explain, the evidence from analysis/ (batch-size model, regime, seed noise, excluded trials).
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/explain.hpp"
#include "analysis/load.hpp"
#include "analysis/pooled_time.hpp"
#include "analysis/to_json.hpp"
#include "common/objective.hpp"
#include "db/storage.hpp"
#include "orchestrator/best_schedule.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

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

int cmd_best_explain(const BestArgs& a) {
  auto by = parse_best_by(a.by);
  if (!by) return report(by.error(), exit_code::usage);
  auto study = load_study_data(a.db, a.study);
  if (!study) return report(study.error(), study.error().is(ErrorKind::not_found) ? exit_code::usage : exit_code::runtime);
  const analysis::Criterion c = *by == BestBy::steps   ? analysis::Criterion::steps
                                : *by == BestBy::value ? analysis::Criterion::value
                                                       : analysis::Criterion::time;  // auto falls back to value
  const auto e = analysis::explain_best(*study, c);
  if (a.format == "json") {
    fmt::print("{}\n", analysis::to_json(e).dump(2));
  } else {
    fmt::print("best schedule of {} by {}, explained:\n", e.study, analysis::criterion_name(e.criterion));
    for (const auto& line : e.lines()) fmt::print("{}{}\n", line.starts_with("  ") ? "  " : "  - ", line);
  }
  return e.winner ? exit_code::ok : exit_code::trials_failed;
}

}  // namespace dlsweep::orch
