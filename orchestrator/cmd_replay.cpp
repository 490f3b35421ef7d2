// cmd_replay.cpp — `dlsweep replay STUDY --pruner KIND`: a finished study's recorded curves
// replayed under another pruner (search/replay), nothing trained; what the sweep would have
// found and at what compute, as sentences and a table, or one JSON object.
#include <fmt/format.h>

#include <map>

#include "orchestrator/commands.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/replay_load.hpp"
#include "orchestrator/table_format.hpp"
#include "search/pruner.hpp"
#include "search/replay.hpp"
#include "search/replay_sampler.hpp"
#include "search/sampler.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

using nlohmann::json;

namespace {

/// "KEY=VALUE" as a pruner option: VALUE as JSON where it is JSON (0.5, 3, true, ["g"]),
/// [a, b] as a list of words, anything else as a word.
Result<std::pair<std::string, json>> parse_option(const std::string& kv, std::string_view flag = "--pruner-option") {
  const auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    return fail_as(ErrorKind::bad_input, fmt::format("{} '{}': expected KEY=VALUE", flag, kv), "replay",
                   fmt::format("write e.g. {} {}", flag, flag == "--pruner-option" ? "reduction_factor=3" : "gamma=0.1"));
  const std::string key = kv.substr(0, eq), text = kv.substr(eq + 1);
  json v = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) {
    if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
      v = json::array();
      std::string item;
      auto flush = [&] {
        const auto b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
        if (b != std::string::npos) v.push_back(item.substr(b, e - b + 1));
        item.clear();
      };
      for (char c : text.substr(1, text.size() - 2)) c == ',' ? flush() : void(item += c);
      flush();
    } else {
      v = text;
    }
  }
  return std::pair{key, v};
}

std::string_view status_word(search::TrialStatus s) {
  switch (s) {
    case search::TrialStatus::complete: return "COMPLETE";
    case search::TrialStatus::pruned: return "PRUNED";
    case search::TrialStatus::failed: return "FAILED";
    default: return "RUNNING";
  }
}

std::string pruner_text(const std::string& kind, const json& options) {
  std::string s = kind;
  std::string opts;
  for (const auto& [k, v] : options.items()) {
    if (k == "kind") continue;
    opts += fmt::format("{}{}: {}", opts.empty() ? "" : ", ", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  return opts.empty() ? s : fmt::format("{} {{{}}}", s, opts);
}

/// How the trials were replayed: "in the recorded order of 3 concurrent trials" or "one
/// after another in their recorded start order".
std::string order_words(const search::ReplayOutcome& o, const ReplayStudy& st) {
  return o.interleaved ? fmt::format("in the recorded order of {} concurrent trials", st.max_concurrent)
                       : "one after another in their recorded start order";
}

/// Why that order ("" where nothing needs saying: one trial at a time, or the recorded order).
std::string order_note(const search::ReplayOutcome& o, const ReplayStudy& st) {
  if (o.interleaved)
    return "each report judged against the other trials as they stood when the sweep judged it (running ones up to "
           "their latest report, finished ones whole); the order is each report's wall_s after its trial's start "
           "and each trial's recorded end";
  if (st.max_concurrent <= 1) return "";
  return fmt::format("the recorded sweep ran up to {} trials at once, but the record gives no order of their reports "
                     "({}); one after another, each decision sees every earlier trial finished, so a pruner may "
                     "decide otherwise than it did then",
                     st.max_concurrent, st.order_why);
}

json outcome_json(const search::ReplayOutcome& o, const ReplayStudy& st, const std::string& study,
                  const std::string& kind, const json& options) {
  json trials = json::array();
  for (const auto& t : o.trials) {
    json j = {{"trial", t.number},
              {"recorded", status_word(t.recorded)},
              {"replayed", t.unknown ? "UNKNOWN" : status_word(t.replayed)},
              {"reports_recorded", t.reports_recorded},
              {"reports_kept", t.reports_kept},
              {"compute_recorded", t.compute_recorded},
              {"compute_replayed", t.compute_replayed},
              {"recorded_value", opt(t.recorded_value)},
              {"value", opt(t.value)}};
    if (t.replayed == search::TrialStatus::pruned && !t.unknown) j["pruned_at"] = t.at, j["reason"] = t.reason;
    if (t.unknown) j["unknown_beyond"] = t.at;
    trials.push_back(std::move(j));
  }
  return {{"study", study},
          {"metric", st.metric},
          {"direction", st.input.maximize ? "max" : "min"},
          {"pruner", {{"kind", kind}, {"options", options}, {"axis", search::axis_name(o.pruner_axis)}}},
          {"recorded_pruner", st.recorded_pruner},
          {"order", o.interleaved ? "recorded" : "sequential"},
          {"order_note", order_note(o, st)},
          {"recorded_max_concurrent", st.max_concurrent},
          {"compute_axis", search::axis_name(o.compute)},
          {"compute_recorded", o.compute_recorded},
          {"compute_replayed", o.compute_replayed},
          {"compute_fraction", o.fraction()},
          {"compute_to_best", o.compute_to_best},
          {"best_recorded", o.best_recorded ? json(*o.best_recorded) : json(nullptr)},
          {"best_recorded_value", opt(o.best_recorded_value)},
          {"best_replayed", o.best_replayed ? json(*o.best_replayed) : json(nullptr)},
          {"best_replayed_value", opt(o.best_replayed_value)},
          {"same_best", o.same_best()},
          {"trials_replayed", o.trials.size()},
          {"trials_not_finished", st.left_out},
          {"pruned_recorded", o.pruned_recorded},
          {"pruned_replayed", o.pruned_replayed},
          {"unknown", o.unknown},
          {"decisions_differ", o.differ},
          {"summary", search::summary_line(o, st.metric)},
          {"trials", std::move(trials)}};
}

void print_text(const search::ReplayOutcome& o, const ReplayStudy& st, const std::string& study,
                const std::string& kind, const json& options) {
  const auto n = o.trials.size();
  fmt::print("{}\n", search::summary_line(o, st.metric));
  fmt::print("replayed: {} finished trial{} of study '{}' {}, under {} (axis {}); nothing was trained\n", n,
             n == 1 ? "" : "s", study, order_words(o, st), pruner_text(kind, options), search::axis_name(o.pruner_axis));
  if (const auto note = order_note(o, st); !note.empty()) fmt::print("{}: {}\n", o.interleaved ? "order" : "note", note);
  if (st.left_out)
    fmt::print("note: {} trial{} not finished (waiting, running or cancelled) left out\n", st.left_out,
               st.left_out == 1 ? "" : "s");
  fmt::print("compute ({}): recorded {:g}, replayed {:g} ({:.1f}%)", st.compute_why, o.compute_recorded,
             o.compute_replayed, 100 * o.fraction());
  if (o.best_replayed)
    fmt::print("; the replay's best (trial {}) finished after {:g} ({:.1f}% of the recorded compute)", *o.best_replayed,
               o.compute_to_best, o.compute_recorded > 0 ? 100 * o.compute_to_best / o.compute_recorded : 0.0);
  fmt::print("\n");
  fmt::print("recorded: pruner {}, best trial {}, pruned {} of {}; the replayed decisions differ for {} trial{}\n",
             pruner_text(st.recorded_pruner.value("kind", "none"), st.recorded_pruner),
             o.best_recorded ? fmt::format("{} ({} {:.6g})", *o.best_recorded, st.metric, *o.best_recorded_value)
                             : std::string("none"),
             o.pruned_recorded, n, o.differ, o.differ == 1 ? "" : "s");
  if (o.unknown) {
    std::string which;
    for (const auto& t : o.trials)
      if (t.unknown)
        which += fmt::format("{}trial {} (at {} {:g})", which.empty() ? "" : ", ", t.number,
                             search::axis_name(o.pruner_axis), t.at);
    fmt::print("unknown: {} trial{} stopped by the recorded sweep that {} would keep longer: {}; their later values "
               "are not in the record, so they count at the compute they recorded and are never the best\n",
               o.unknown, o.unknown == 1 ? "" : "s", kind, which);
  }
  // "stopped" (not "…_at": the table shows such columns as times): where the replay stopped
  // the trial, or where its record ends when its later values are unknown.
  Rows rows;
  rows.columns = {"trial", "recorded", "replayed", "stopped", "compute", "of_recorded", "recorded_value", "value"};
  for (const auto& t : o.trials) {
    const bool stopped = t.replayed == search::TrialStatus::pruned;
    rows.rows.push_back({t.number, std::string(status_word(t.recorded)),
                         t.unknown ? std::string("UNKNOWN beyond") : std::string(status_word(t.replayed)),
                         stopped ? json(fmt::format("{} {:g}", search::axis_name(o.pruner_axis), t.at)) : json(nullptr),
                         t.compute_replayed, t.compute_recorded, opt(t.recorded_value), opt(t.value)});
  }
  fmt::print("\n{}", render(rows, OutputFormat::table));
}

/// `--algorithm`: the sampler's proposals over the recorded grid (search/replay_sampler).
int replay_sampler_verb(const ReplayArgs& a, const db::StudyRow& row, const ReplayStudy& st,
                        const search::Pruner& pruner, const std::string& kind, const json& pruner_options,
                        OutputFormat format) {
  auto spec = parse_study(row.spec_json, StudyFormat::json, row.source_path.empty() ? row.name : row.source_path);
  if (!spec) return print_stored_study_errors(spec.error());
  if (auto grid = search::covers_grid(st.input.trials, spec->space); !grid)
    return print_error(Error{fmt::format("--algorithm needs a study whose finished trials cover a grid; in study '{}' {}",
                                         row.name, grid.error()),
                             "replay",
                             "replay the pruner alone (leave --algorithm out), or fill the grid first (`dlsweep "
                             "resume " + row.name + " --rerun cancelled,failed`)",
                             ErrorKind::bad_input},
                       "nothing was replayed.");
  json options = a.algorithm == spec->search.algorithm ? spec->search.options : json::object();
  for (const auto& kv : a.algorithm_options) {
    auto p = parse_option(kv, "--algorithm-option");
    if (!p) return print_error(p.error());
    options[p->first] = p->second;
  }
  const std::uint64_t seed = a.seed ? *a.seed : spec->search.seed;
  auto sampler = search::make_sampler(a.algorithm, spec->space, seed, options);
  if (!sampler) {
    std::vector<Error> errors;
    for (const auto& e : sampler.error())
      errors.push_back(Error{e.what, e.key.empty() ? "--algorithm" : "--algorithm-option " + e.key, e.fix,
                             ErrorKind::bad_input});
    return print_errors(errors, exit_code::usage, "nothing was replayed.");
  }
  const std::int64_t trials = a.trials > 0 ? a.trials : std::int64_t(st.input.trials.size());
  const auto r = search::replay_sampler(st.input, spec->space, **sampler, pruner, trials);
  json proposals = json::array();
  for (const auto& p : r.proposals)
    proposals.push_back({{"proposal", p.index}, {"proposed", p.proposed}, {"trial", p.trial}, {"exact", p.exact},
                         {"repeat", p.repeat}});
  if (format == OutputFormat::json) {
    json j = outcome_json(r.outcome, st, row.name, kind, pruner_options);
    j["algorithm"] = {{"kind", a.algorithm}, {"seed", seed}, {"options", options}};
    j["order_note"] = "a sampler's proposals are replayed one after another";
    j["proposals"] = std::move(proposals);
    j["off_grid"] = r.off_grid;
    j["repeats"] = r.repeats;
    j["best_found_at"] = r.found_at ? json(*r.found_at) : json(nullptr);
    j["compute_to_found"] = r.compute_to_found;
    j["summary"] = search::sampler_summary_line(r, st.metric);
    fmt::print("{}\n", j.dump(2));
    return exit_code::ok;
  }
  fmt::print("{}\n", search::sampler_summary_line(r, st.metric));
  fmt::print("replayed: {} proposals of {} (seed {}) over the {} finished trials of study '{}' (a grid), each "
             "trial's recorded curve under {} one after another; nothing was trained\n",
             r.proposals.size(), a.algorithm, seed, st.input.trials.size(), row.name, pruner_text(kind, pruner_options));
  Rows rows;
  rows.columns = {"proposal", "trial", "replayed", "compute", "value", "note"};
  for (std::size_t i = 0; i < r.proposals.size(); ++i) {
    const auto& p = r.proposals[i];
    const auto& t = r.outcome.trials[i];
    std::string note = p.exact ? "" : "off the grid: " + p.proposed.dump() + ", nearest point";
    if (p.repeat) note += std::string(note.empty() ? "" : "; ") + "repeats an earlier point";
    rows.rows.push_back({p.index, p.trial, t.unknown ? std::string("UNKNOWN beyond") : std::string(status_word(t.replayed)),
                         t.compute_replayed, t.value ? json(*t.value) : json(nullptr), note});
  }
  fmt::print("\n{}", render(rows, OutputFormat::table));
  return exit_code::ok;
}

}  // namespace

int cmd_replay(const ReplayArgs& a) {
  auto o = open_for_reading(a.db, a.format);
  if (!o) return print_error(o.error(), exit_code::usage);
  auto row = find_study(*o->storage, a.study);
  if (!row) return print_error(row.error(), exit_code::usage);
  auto st = load_replay_study(*o->storage, *row, a.compute);
  if (!st) return print_error(st.error());

  // The pruner: the study's own (`recorded`, with its stored options) or a kind of make_pruner's.
  if (a.pruner.empty() && a.algorithm.empty())
    return print_error(Error{"nothing to replay", "replay",
                             "give --pruner KIND (or recorded), and/or --algorithm KIND for a grid study",
                             ErrorKind::bad_input});
  std::string kind = a.pruner.empty() ? "recorded" : a.pruner;
  json options = json::object();
  if (kind == "recorded") {
    kind = st->recorded_pruner.value("kind", "none");
    for (const auto& [k, v] : st->recorded_pruner.items())
      if (k != "kind") options[k] = v;
  }
  for (const auto& kv : a.pruner_options) {
    auto p = parse_option(kv);
    if (!p) return print_error(p.error());
    options[p->first] = p->second;
  }
  auto pruner = search::make_pruner(kind, options);
  if (!pruner) {
    std::vector<Error> errors;
    for (const auto& e : pruner.error())
      errors.push_back(Error{e.what, e.key == "kind" ? "--pruner" : "--pruner-option " + e.key,
                             e.key == "kind" ? e.fix + ", or recorded (the study's own)" : e.fix, ErrorKind::bad_input});
    return print_errors(errors, exit_code::usage, "nothing was replayed.");
  }

  if (!a.algorithm.empty()) return replay_sampler_verb(a, *row, *st, **pruner, kind, options, o->format);
  const auto outcome = search::replay(st->input, **pruner);
  if (o->format == OutputFormat::json) {
    fmt::print("{}\n", outcome_json(outcome, *st, row->name, kind, options).dump(2));
    return exit_code::ok;
  }
  print_text(outcome, *st, row->name, kind, options);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
