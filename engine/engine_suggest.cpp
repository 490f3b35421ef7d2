// engine_suggest.cpp — define-by-run: the trial program's suggest_* requests (suggest.jsonl,
// appended by global rank 0) answered in suggested.json, which every rank reads.
//
// A name the study declares (`space:`) is answered with the trial's value after checking the
// program's call agrees with the declaration; a fixed name with its fixed value if the call
// allows it; a name the trial was answered before (resume, requeue, retry, another rank) with
// its stored value; any other name is drawn (search/discovered.hpp), added to the trial's
// params in the database and the search history, so results/best/report/export show it like a
// declared one. A discovered name's distribution is the first asker's (an event "suggest");
// a later different one is an error naming both.
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "common/protocol.hpp"
#include "engine/engine.hpp"
#include "engine/trial_files.hpp"
#include "search/discovered.hpp"

namespace dlsweep::orch {

namespace {
constexpr std::uint64_t kMaxSuggestBytes = 1 << 20;  // per read: a program asks for a few names
}

void Engine::serve_suggests(Live& live) {
  const auto path = std::filesystem::path(live.row.trial_dir) / protocol::kSuggestFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  if (size < live.suggest_offset) live.suggest_offset = 0;  // rewritten: answer from its start
  if (size == live.suggest_offset) return;
  in.seekg(static_cast<std::streamoff>(live.suggest_offset));
  std::string buf(static_cast<std::size_t>(std::min<std::uint64_t>(size - live.suggest_offset, kMaxSuggestBytes)), '\0');
  in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
  buf.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t start = 0;
  bool answered = false;
  for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = buf.substr(start, nl - start);
    if (line.empty()) continue;
    auto req = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!req.is_object() || !req.contains("name") || !req["name"].is_string() || req["name"].get<std::string>().empty() ||
        !req.contains("distribution")) {
      progress_.event(fmt::format("trial {}: skipped a bad line in {} (fix: write {{\"name\": ..., \"distribution\": "
                                  "...}} per line, as dlsweep_trial.suggest_* does)",
                                  live.row.number, path.string()),
                      snapshot());
      continue;
    }
    const std::string name = req["name"].get<std::string>();
    nlohmann::json answer = answer_suggest(live, name, req["distribution"]);
    answer["distribution"] = req["distribution"];  // the program matches its own call with it
    if (answer.contains("error"))
      progress_.event(fmt::format("trial {}: {}", live.row.number, answer["error"].get<std::string>()), snapshot());
    live.suggested[name] = std::move(answer);
    answered = true;
  }
  live.suggest_offset += start;  // a torn last line waits for its end
  if (!answered) return;
  flush();  // the value is in the database before the program can use it
  if (auto st = write_suggested(live.row.trial_dir, live.suggested); !st)
    progress_.event(fmt::format("warning: trial {}: cannot answer its suggest_* calls: {}", live.row.number,
                                st.error().message()),
                    snapshot());
}

nlohmann::json Engine::answer_suggest(Live& live, const std::string& name, const nlohmann::json& raw) {
  auto error = [](std::string why) { return nlohmann::json{{"error", std::move(why)}}; };
  auto dist = search::parse_distribution(raw);
  if (!dist) return error(fmt::format("suggest '{}': {}", name, dist.error()));
  // Declared by the study file.
  for (const auto& d : spec_.space.dims) {
    if (d.name != name) continue;
    if (auto why = search::contradiction(d, name, *dist)) return error(*why);
    if (!live.row.params.contains(name))
      return error(fmt::format("{} is declared with `when:` conditions this trial does not meet, so it has no "
                               "value (fix: call {} only where the study's conditions hold, or drop the study's "
                               "entry)",
                               search::describe_declared(d), dist->call(name)));
    return {{"value", live.row.params[name]}};
  }
  if (spec_.space.fixed.is_object() && spec_.space.fixed.contains(name)) {
    const auto& v = spec_.space.fixed[name];
    if (!search::contains(*dist, v))
      return error(fmt::format("the study fixes {} = {} but the program calls {}, which cannot give that value", name,
                               v.dump(), dist->call(name)));
    return {{"value", v}};
  }
  // Discovered: one distribution per study, the first asker's.
  if (!discovered_loaded_) {
    discovered_loaded_ = true;
    std::vector<std::string> reasons;
    if (auto evs = storage_.events(study_id_))
      for (const auto& e : *evs)
        if (e.kind == "suggest") reasons.push_back(e.reason);
    discovered_ = search::discovered_from_events(reasons);
  }
  if (auto it = discovered_.find(name); it != discovered_.end()) {
    if (!(it->second == *dist))
      return error(fmt::format("the program calls {} but an earlier trial of this study called {} for the same "
                               "name: a parameter keeps one distribution per study (fix: make the calls agree, or "
                               "use another name)",
                               dist->call(name), it->second.call(name)));
  } else {
    db::EventRow e;
    e.study_id = study_id_;
    e.trial_id = live.row.id;
    e.who = "orchestrator";
    e.kind = "suggest";
    e.attempt = live.row.attempt;
    e.reason = nlohmann::json{{"name", name}, {"distribution", dist->to_json()}}.dump();
    if (auto id = db().note_event(e); !id) { fatal(id.error()); return error("the database failed"); }
    discovered_.emplace(name, *dist);
  }
  if (live.row.params.contains(name)) {
    const auto& v = live.row.params[name];
    if (search::contains(*dist, v)) return {{"value", v}};
    return error(fmt::format("this trial was given {} = {} before, which {} cannot give", name, v.dump(),
                             dist->call(name)));
  }
  nlohmann::json v = search::draw_discovered(spec_.search.algorithm, spec_.search.seed, spec_.search.options, name,
                                             *dist, live.row.number, history_, discovered_);
  if (auto st = db().add_trial_param(live.row.id, name, v); !st) { fatal(st.error()); return error("the database failed"); }
  live.row.params[name] = v;
  if (auto* rec = history_of(live.row.id)) rec->params[name] = v;
  return {{"value", v}};
}

}  // namespace dlsweep::orch
