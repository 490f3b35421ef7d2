// cmd_best.cpp — `dlsweep best STUDY [--explain]`: the recommended schedule and why; with
// --explain, the evidence from analysis/ (batch-size model, regime, seed noise, excluded trials);
// with --group-by PARAM, also the batch-size model per value of PARAM (analysis/grouped_fit.hpp).
// Both, and the report, take the winner from the one ranking (analysis/ranking.hpp); this file
// only reads the study and prints.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analysis/explain.hpp"
#include "analysis/grouped_fit.hpp"
#include "analysis/load.hpp"
#include "analysis/ranking.hpp"
#include "analysis/to_json.hpp"
#include "common/search_choice.hpp"
#include "common/stored_study.hpp"
#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/cmd_best_branch.hpp"
#include "orchestrator/cmd_best_front.hpp"
#include "orchestrator/cmd_best_pbt.hpp"
#include "orchestrator/cmd_best_text.hpp"
#include "orchestrator/commands.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

namespace {

// The checkpoint records of trial `number`'s current attempt, in order (empty when none or unreadable).
std::vector<CheckpointRecord> checkpoints_of(const db::Storage& storage, std::int64_t study_id, std::int64_t number) {
  std::vector<CheckpointRecord> out;
  // Both are integers of ours: formatting them into the SQL text is safe.
  auto q = storage.query(fmt::format(
      "SELECT r.step, r.epoch, r.text FROM records r JOIN trials t ON t.id = r.trial_id AND t.attempt = r.attempt "
      "WHERE t.study_id = {} AND t.number = {} AND r.kind = 'checkpoint' ORDER BY r.seq",
      study_id, number));
  if (!q) return out;
  for (const auto& r : q->rows)
    out.push_back({r[0].get<std::int64_t>(), r[1].get<double>(), r[2].is_string() ? r[2].get<std::string>() : ""});
  return out;
}

// `search.algorithm: auto`: the algorithms it used and from which trial (the engine's `search`
// events, common/search_choice.hpp); empty for every other algorithm or an unreadable study.
std::vector<SearchChoice> search_choices_of(const db::Storage& storage, const std::string& name) {
  std::vector<SearchChoice> out;
  auto st = storage.find_study(name);
  if (!st || !*st) return out;
  auto events = storage.events((**st).id);
  if (!events) return out;
  for (const auto& e : *events)
    if (e.kind == kSearchChoiceEventKind)
      if (auto c = SearchChoice::from_json(json::parse(e.reason, nullptr, false))) out.push_back(std::move(*c));
  return merge_search_choices(std::move(out));
}

// Why there is no winner, for "study S: nothing to recommend: WHY".
std::string why_none(const db::StudyRow& st, const analysis::StudyData& study, const analysis::Ranking& r) {
  if (r.complete == 0 && study.trials.empty()) return "it has no trial yet";
  if (r.complete == 0) return st.state == "RUNNING" ? "no trial has completed yet" : "no trial completed";
  if (!r.order.empty() && r.order.front().violation > 0)
    return "no complete trial satisfies the study's constraints (infeasible trials never win)";
  if (r.criterion != analysis::Criterion::value)
    return fmt::format("no complete trial reached the target {:g} (`--by value` ranks them by {})", *study.target,
                       study.metric);
  return fmt::format("no complete trial has a value for {}", study.metric);
}

// --write-schedule of a study that is not population-based training (one objective or
// several, plain or --explain): refused, never silently ignored.
int refuse_write_schedule() {
  return print_error(Error{"only a pbt study has a schedule to write", "--write-schedule",
                      "the winner's params are in `best --format json`"},
                exit_code::usage);
}

// True when the study is a pbt study (its `best`, --explain included, is cmd_best_pbt's) or a
// branching study (cmd_best_branch's); a study that cannot be read is left to the caller's own error.
bool pbt_study(const BestArgs& a) {
  auto o = open_for_reading(a.db, "table");
  if (!o) return false;
  auto st = find_study(*o->storage, a.study);
  if (!st) return false;
  auto stored = read_stored_study(st->spec_json, st->name);
  if (stored && stored->branch) return true;
  auto pbt = load_pbt(*o->storage, *st);
  return pbt && *pbt;
}

}  // namespace

int cmd_best(const BestArgs& a) {
  if ((a.explain || !a.group_by.empty()) && !pbt_study(a)) return cmd_best_explain(a);
  auto o = open_for_reading(a.db, a.format == "json" ? "json" : "table");
  if (!o) return print_error(o.error(), exit_code::usage);
  auto by = analysis::parse_rank_by(a.by);
  if (!by) return print_error(by.error(), exit_code::usage);
  auto st = find_study(*o->storage, a.study);
  if (!st) return print_error(st.error(), exit_code::usage);
  auto study = analysis::load_study(*o->storage, st->name);
  if (!study) return print_error(study.error(), exit_code::runtime);
  if (study->multi_objective()) return a.write_schedule.empty() ? cmd_best_front(a, *study) : refuse_write_schedule();
  auto pbt = load_pbt(*o->storage, *st);  // population-based training: the winner's schedule
  if (!pbt) return print_error(pbt.error(), exit_code::runtime);
  if (*pbt && !a.group_by.empty())
    return print_error(Error{"--group-by fits the batch-size model across trials; a pbt study's trials are intervals of its members",
                        "--group-by", "use `best --explain` for the winner's schedule and its evidence"},
                  exit_code::usage);
  if (*pbt) return cmd_best_pbt(a, **pbt, *study);
  auto branch = load_branch(*o->storage, *st);  // branching: the critical-batch curve and its schedule
  if (!branch) return print_error(branch.error(), exit_code::runtime);
  if (*branch && !a.group_by.empty())
    return print_error(Error{"--group-by fits the batch-size model across trials; a branching study measures the critical "
                             "batch at each point from its branches instead",
                             "--group-by", "use `best --explain` for the critical batch at each point and its evidence"},
                       exit_code::usage);
  if (*branch) return cmd_best_branch(a, **branch, *study);
  if (!a.write_schedule.empty()) return refuse_write_schedule();
  auto sums = o->storage->summaries(st->id);  // the last value, which analysis/ does not read
  if (!sums) return print_error(sums.error(), exit_code::runtime);
  const analysis::Ranking ranking = analysis::rank(*study, *by);
  const std::string left_out = left_out_text(ranking);
  const auto winner = ranking.winner();
  if (!winner) {
    fmt::print(stderr, "study {}: nothing to recommend: {}{}\n", st->name, why_none(*st, *study, ranking),
               left_out.empty() ? "" : "; " + left_out);
    if (const auto missing = never_reported_text(*study); !missing.empty()) fmt::print(stderr, "  - {}\n", missing);
    return exit_code::trials_failed;
  }
  const auto& t = study->trials[*winner];
  const auto sum = std::find_if(sums->begin(), sums->end(), [&](const auto& s) { return s.number == t.number; });
  const std::string criterion = analysis::criterion_name(ranking.criterion, ranking.final);
  const auto explanation = best_explanation(*study, ranking);
  const bool by_value = ranking.criterion == analysis::Criterion::value;
  const auto checkpoints = checkpoints_of(*o->storage, st->id, t.number);
  const std::string model = winner_model_text(t, study->rank_final, checkpoints);
  if (o->format == OutputFormat::json) {
    // A pooled time is named for dlsweep's trainer only (a user program's trials stand alone).
    const auto& pooled = ranking.pooled[*winner];
    const bool pooled_shown = study->trainer && pooled && ranking.criterion == analysis::Criterion::time;
    json left = json::object();
    for (const auto& [state, n] : ranking.left_out) left[state] = n;
    json j{{"study", st->name},
           {"criterion", criterion},
           {"trial", t.number},
           {"params", t.params},
           {"value", sum != sums->end() ? opt(sum->value) : json(nullptr)},
           {"best_value", opt(t.best_value)},
           {"rank_by", study->rank_final ? "final" : "best"},
           {"ranking_value", opt(study->objective_value(t))},
           {"model", model},
           {"steps_to_target", opt(t.steps_to_target)},
           {"time_to_target_s", opt(t.time_to_target_s)},
           {"time_to_target_pooled_s", pooled_shown ? json(pooled->seconds) : json(nullptr)},
           {"pooled_trials", pooled_shown ? json(pooled->trials) : json(nullptr)},
           {"explanation", explanation},
           {"eligible", ranking.complete},
           {"left_out", left}};
    fmt::print("{}\n", j.dump(2));
  } else {
    const bool schedule = schedule_study(*study);
    fmt::print("best {} of {} by {}: trial {}\n", schedule ? "schedule" : "trial", st->name, criterion, t.number);
    for (const auto& line : explanation) fmt::print("  - {}\n", line);
    if (by_value) fmt::print("  - {}\n", ranked_by_text(study->rank_final));
    if (!left_out.empty()) fmt::print("  - {}\n", left_out);
    // A plain search whose program keeps no checkpoint through the protocol lost nothing.
    if (schedule || !checkpoints.empty()) fmt::print("  - {}\n", model);
    fmt::print("  params: {}\n", params_brief(t.params));  // 4 significant digits; --format json: whole
  }
  return exit_code::ok;
}

int cmd_best_explain(const BestArgs& a) {
  auto by = analysis::parse_rank_by(a.by);
  if (!by) return print_error(by.error(), exit_code::usage);
  auto study = load_study_data(a.db, a.study);
  if (!study) return print_error(study.error(), study.error().is(ErrorKind::not_found) ? exit_code::usage : exit_code::runtime);
  if (!a.write_schedule.empty()) return refuse_write_schedule();  // cmd_best sends a pbt study elsewhere
  if (study->multi_objective()) return cmd_best_front(a, *study);
  // --group-by: S(B) and B_crit per value of the parameter (analysis/grouped_fit.hpp); an
  // unknown parameter is a usage error naming the study's parameters.
  std::optional<analysis::GroupedFit> grouped;
  if (!a.group_by.empty()) {
    auto g = analysis::fit_by_group(*study, a.group_by);
    if (!g) return print_error(g.error(), exit_code::usage);
    grouped = std::move(*g);
  }
  const auto e = analysis::explain_best(*study, *by);
  // The winner's batch over training, when it was decided as it trained (batch_ramp adaptive).
  std::vector<analysis::BatchDecision> decisions;
  auto storage = db::Storage::open_readonly(a.db);
  if (!storage) return print_error(storage.error(), exit_code::runtime);
  if (e.winner) {
    auto d = analysis::load_batch_decisions(**storage, a.study, e.winner->best_trial);
    if (!d) return print_error(d.error(), exit_code::runtime);
    decisions = std::move(*d);
  }
  // auto: which algorithm proposed which trials.
  const auto choices = search_choices_of(**storage, a.study);
  std::optional<std::int64_t> last_number;
  for (const auto& t : study->trials) last_number = std::max(last_number.value_or(t.number), t.number);
  if (a.format == "json") {
    json j = analysis::to_json(e);
    if (!decisions.empty()) j["batch_over_training"] = analysis::batch_trajectory_json(decisions);
    if (!choices.empty()) {
      json c = json::array();
      for (const auto& ch : choices) c.push_back(ch.to_json());
      j["search_choices"] = c;
    }
    if (grouped) {
      json g = analysis::to_json(*grouped);
      j["group_by"] = {{"param", g["param"]}, {"epoch_factor", g["epoch_factor"]}, {"lines", g["lines"]}};
      j["groups"] = g["groups"];
    }
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("best {} of {} by {}, explained:\n", schedule_study(*study) ? "schedule" : "trial", e.study,
               analysis::criterion_name(e.criterion, e.final));
    for (const auto& line : e.lines()) fmt::print("{}{}\n", line.starts_with("  ") ? "  " : "  - ", line);
    if (e.criterion == analysis::Criterion::value) fmt::print("  - {}\n", ranked_by_text(e.final));
    if (!decisions.empty()) fmt::print("  - {}\n", analysis::batch_trajectory_line(decisions));
    if (!choices.empty()) fmt::print("  - {}\n", search_choices_line(choices, last_number));
    if (grouped)
      for (const auto& line : grouped->lines()) fmt::print("{}{}\n", line.starts_with("  ") ? "  " : "  - ", line);
  }
  return e.winner ? exit_code::ok : exit_code::trials_failed;
}

}  // namespace dlsweep::orch
