// cmd_best_pbt.cpp — `best` of a pbt study: the last generation's winner, its schedule, and
// the replay study (cmd_best_pbt.hpp).
#include "orchestrator/error_printer.hpp"
#include "orchestrator/cmd_best_pbt.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "analysis/ranking.hpp"
#include "common/atomic_file.hpp"
#include "common/exit_codes.hpp"
#include "common/stored_study.hpp"
#include "orchestrator/cmd_best_text.hpp"
#include "orchestrator/read_support.hpp"
#include "orchestrator/table_format.hpp"

namespace dlsweep::orch {

using nlohmann::json;

namespace {

std::map<std::int64_t, json> params_by_number(const analysis::StudyData& study) {
  std::map<std::int64_t, json> out;
  for (const auto& t : study.trials) out[t.number] = t.params;
  return out;
}

std::vector<std::string> searched(const PbtStudy& pbt) {
  std::vector<std::string> out;
  for (const auto& d : pbt.spec.space.dims) out.push_back(d.name);
  return out;
}

// `best --explain`: why each interval of the winner's lineage is what it is — the value it
// reached, its rank among the interval's trials (the whole population), the interval's best
// and median, and for an exploit, the rank that made its member copy the donor.
json pbt_evidence(const PbtStudy& pbt, const analysis::StudyData& study, const std::vector<const PbtLink*>& chain) {
  std::map<std::int64_t, std::optional<double>> value;
  for (const auto& t : study.trials) value[t.number] = t.last_value();
  const bool maximize = study.mode == "max";
  json out = json::array();
  for (const PbtLink* l : chain) {
    std::vector<double> gen;
    for (const auto& [n, link] : pbt.links)
      if (link.generation == l->generation && value[n]) gen.push_back(*value[n]);
    std::sort(gen.begin(), gen.end(), [&](double a, double b) { return maximize ? a > b : a < b; });
    const auto v = value[l->number];
    json e{{"start", l->start}, {"end", l->end}, {"trial", l->number}, {"member", l->member},
           {"value", v ? json(*v) : json(nullptr)}, {"rank", nullptr}, {"ranked", gen.size()},
           {"interval_best", gen.empty() ? json(nullptr) : json(gen.front())},
           {"interval_median", gen.empty() ? json(nullptr) : json(gen[gen.size() / 2])},
           {"previous_rank", l->rank ? json(*l->rank + 1) : json(nullptr)},
           {"exploit_from", l->exploit_from ? json(*l->exploit_from) : json(nullptr)}, {"factors", l->factors},
           {"resampled", l->resampled}};
    if (v) e["rank"] = 1 + std::count_if(gen.begin(), gen.end(), [&](double x) { return maximize ? x > *v : x < *v; });
    out.push_back(std::move(e));
  }
  return out;
}

void print_evidence(const json& evidence, const std::string& metric, const std::string& axis) {
  fmt::print("  evidence, interval by interval ({} at each interval's end, what PBT ranks members by; rank among the "
             "interval's trials):\n", metric);
  for (const auto& e : evidence) {
    fmt::print("    {} [{:g}, {:g}): trial {} (member {}) {} — rank {} of {} (interval best {}, median {})", axis,
               e["start"].get<double>(), e["end"].get<double>(), e["trial"].get<std::int64_t>(),
               e["member"].get<std::int64_t>(), e["value"].is_null() ? "no value" : fmt::format("{:.4g}", e["value"].get<double>()),
               e["rank"].is_null() ? "-" : e["rank"].dump(), e["ranked"].get<std::size_t>(),
               e["interval_best"].is_null() ? "-" : fmt::format("{:.4g}", e["interval_best"].get<double>()),
               e["interval_median"].is_null() ? "-" : fmt::format("{:.4g}", e["interval_median"].get<double>()));
    if (!e["exploit_from"].is_null()) {
      const std::string f = pbt_explore_text(e["factors"], e["resampled"]);
      fmt::print("; its member had ranked {} in the interval before, so it took trial {}'s weights and params{}",
                 e["previous_rank"].is_null() ? "last" : e["previous_rank"].dump(), e["exploit_from"].get<std::int64_t>(),
                 f.empty() ? "" : " and explored " + f);
    } else if (!e["previous_rank"].is_null()) {
      fmt::print("; its member had ranked {} and kept its own weights", e["previous_rank"].dump());
    }
    fmt::print("\n");
  }
}

}  // namespace

Result<std::optional<PbtStudy>> load_pbt(const db::Storage& storage, const db::StudyRow& st) {
  // Only a pbt study's stored spec is read in full (parse_study): the typed reading of the
  // few keys (common/stored_study.hpp) says whether it is one.
  auto stored = read_stored_study(st.spec_json, st.name);
  if (!stored) return std::unexpected(stored.error());
  if (!stored->pbt) return std::optional<PbtStudy>{};
  auto spec = parse_study(st.spec_json, StudyFormat::json, st.source_path.empty() ? st.name : st.source_path);
  if (!spec) return fail(spec.error().front().message(), "studies.spec_json", "the stored study no longer reads back");
  if (spec->search.algorithm != "pbt") return std::optional<PbtStudy>{};
  PbtStudy pbt{std::move(*spec), {}, 0};
  pbt.generations = pbt.spec.search.options.value("generations", std::int64_t{0});
  auto links = load_links(storage, st.id);
  if (!links) return std::unexpected(links.error());
  pbt.links = std::move(*links);
  return std::optional<PbtStudy>{std::move(pbt)};
}

Result<PbtLinks> load_links(const db::Storage& storage, std::int64_t study_id) {
  auto trials = storage.list_trials(study_id);
  if (!trials) return std::unexpected(trials.error());
  auto events = storage.events(study_id);
  if (!events) return std::unexpected(events.error());
  std::map<std::int64_t, std::int64_t> number_of;
  for (const auto& t : *trials) number_of[t.id] = t.number;
  PbtLinks links;
  for (const auto& e : *events) {
    if (e.kind != kPbtEventKind || !e.trial_id || !number_of.contains(*e.trial_id)) continue;
    const std::int64_t n = number_of[*e.trial_id];
    if (auto l = PbtLink::from_json(n, json::parse(e.reason, nullptr, false))) links[n] = *l;
  }
  return links;
}

std::map<std::int64_t, std::string> pbt_status_cells(const PbtStudy& pbt) {
  std::map<std::int64_t, std::string> out;
  for (const auto& [n, l] : pbt.links) out[n] = l.brief();
  return out;
}

json pbt_replay_study(const PbtStudy& pbt, const analysis::StudyData& study, std::int64_t winner) {
  json j = pbt.spec.to_json();
  const auto params = params_by_number(study);
  const auto chain = pbt_chain(pbt.links, winner);
  j["name"] = pbt.spec.name + "-replay";
  j["description"] = fmt::format("the schedule of trial {} of pbt study {}, replayed as one fixed trial", winner,
                                 pbt.spec.name);
  j["search"] = {{"algorithm", "grid"}, {"seed", pbt.spec.search.seed}};
  j.erase("space");
  j.erase("pruner");
  json fixed = params.contains(winner) ? params.at(winner) : json::object();
  fixed.erase("stop_epoch");
  if (pbt.spec.trial.embedded) fixed = pbt_params_file(fixed);  // batch_size where the ramp starts
  if (!pbt.spec.trial.embedded) {
    json schedule = json::array();
    for (const auto& s : pbt_schedule(chain, params, searched(pbt)))
      schedule.push_back({{s["axis"].get<std::string>(), s["start"]}, {"params", s["params"]}});
    fixed["schedule"] = schedule.dump();
  }
  j["fixed"] = fixed;
  return j;
}

json relocate_study_file(json j, const std::filesystem::path& from_dir, const std::filesystem::path& to_dir) {
  namespace fs = std::filesystem;
  // Both with a trailing separator, so that "/s" and "/s/." compare equal.
  auto folder = [](const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    return ((ec || c.empty() ? p : c) / "").lexically_normal();
  };
  const fs::path from = folder(from_dir), to = folder(to_dir);
  if (from_dir.empty() || from == to) return j;
  const std::string key = "{study_dir}", dir = from.parent_path().string();
  if (j.contains("trial") && j["trial"].is_object() && j["trial"].contains("command") && j["trial"]["command"].is_array())
    for (auto& w : j["trial"]["command"])
      if (w.is_string()) {
        std::string s = w.get<std::string>();
        for (auto pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + dir.size())) s.replace(pos, key.size(), dir);
        w = s;
      }
  if (j.contains("backend") && j["backend"].is_object() && j["backend"].contains("template") &&
      j["backend"]["template"].is_string()) {
    const fs::path t = j["backend"]["template"].get<std::string>();
    if (t.is_relative()) j["backend"]["template"] = (from.parent_path() / t).lexically_normal().string();
  }
  return j;
}

int cmd_best_pbt(const BestArgs& a, const PbtStudy& pbt, const analysis::StudyData& study) {
  // The winner: the last generation's best, by the one ranking.
  analysis::StudyData last = study;
  std::erase_if(last.trials, [&](const analysis::TrialData& t) {
    auto l = pbt.links.find(t.number);
    return l == pbt.links.end() || l->second.generation + 1 != pbt.generations;
  });
  auto by = analysis::parse_rank_by(a.by == "auto" ? "value" : a.by);
  if (!by) return print_error(by.error(), exit_code::usage);
  const analysis::Ranking ranking = analysis::rank(last, *by);
  const auto w = ranking.winner();
  if (!w) {
    fmt::print(stderr, "study {}: nothing to recommend: no trial of its last generation ({} of {}) completed{}\n",
               study.name, pbt.generations - 1, pbt.generations,
               last.trials.empty() ? " (it has not started yet)" : "");
    return exit_code::trials_failed;
  }
  const auto& t = last.trials[*w];
  const auto params = params_by_number(study);
  const auto chain = pbt_chain(pbt.links, t.number);
  const json schedule = pbt_schedule(chain, params, searched(pbt));
  if (!a.write_schedule.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path out = fs::absolute(a.write_schedule, ec);
    // The stored source_path is absolute; without one, {study_dir} is left as it was.
    const bool source_known = fs::path(pbt.spec.source).is_absolute();
    if (source_known && fs::equivalent(out, pbt.spec.source, ec))
      return print_error(Error{fmt::format("{} is the study file of {} itself", a.write_schedule, study.name), "--write-schedule",
                          "write the replay to a new file, e.g. --write-schedule replay.yaml"},
                    exit_code::usage);
    json replay = pbt_replay_study(pbt, study, t.number);
    if (source_known) replay = relocate_study_file(std::move(replay), pbt.spec.study_dir, out.parent_path());
    if (auto st = write_file_atomic(out, replay.dump(2) + "\n"); !st)
      return print_error(Error{fmt::format("cannot write {}: {}", a.write_schedule, st.error().what), "--write-schedule",
                          "give a file in a folder that exists and that you can write"},
                    exit_code::runtime);
  }
  const std::int64_t population = pbt.spec.search.options.value("population", std::int64_t{0});
  if (a.format == "json") {
    json j{{"study", study.name},
           {"algorithm", "pbt"},
           {"criterion", analysis::criterion_name(ranking.criterion, ranking.final)},
           {"rank_by", "final"},
           {"ranking_value", opt(study.objective_value(t))},
           {"trial", t.number},
           {"member", chain.empty() ? json(nullptr) : json(chain.back()->member)},
           {"params", t.params},
           {"best_value", opt(t.best_value)},
           {"population", population},
           {"generations", pbt.generations},
           {"schedule", schedule}};
    if (!a.write_schedule.empty()) j["replay_study"] = a.write_schedule;
    if (a.explain) j["evidence"] = pbt_evidence(pbt, study, chain);
    fmt::print("{}\n", j.dump(2));
    return exit_code::ok;
  }
  fmt::print("best schedule of {} (pbt: population {}, {} generations) by {}: trial {}{}\n", study.name, population,
             pbt.generations, analysis::criterion_name(ranking.criterion, ranking.final), t.number,
             chain.empty() ? "" : fmt::format(" (member {})", chain.back()->member));
  if (const auto v = study.objective_value(t)) fmt::print("  - {} = {:.4g} at the end of its last interval\n", study.metric, *v);
  fmt::print("  - ranked by final report: pbt ranks each interval by it (the checkpoint the winner ended with holds "
             "that model)\n");
  fmt::print("  schedule, interval by interval (its lineage):\n");
  for (const auto& s : schedule)
    fmt::print("    {} [{:g}, {:g}): {}  (trial {}, member {}{})\n", s["axis"].get<std::string>(), s["start"].get<double>(),
               s["end"].get<double>(), params_brief(s["params"]), s["trial"].get<std::int64_t>(),
               s["member"].get<std::int64_t>(),
               s["exploit_from"].is_null() ? "" : fmt::format(", copied trial {}", s["exploit_from"].get<std::int64_t>()));
  if (a.explain) print_evidence(pbt_evidence(pbt, study, chain), study.metric, chain.empty() ? "epoch" : chain.front()->axis);
  fmt::print("  params: {}\n", params_brief(t.params));
  if (!a.write_schedule.empty())
    fmt::print("  replay study written to {} (`dlsweep submit {}` runs it as one fixed trial)\n", a.write_schedule,
               a.write_schedule);
  else fmt::print("  replay it: `dlsweep best {} --write-schedule replay.yaml`\n", study.name);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
