// warm_start_load.cpp — earlier studies' COMPLETE trials read and placed (warm_start_load.hpp).
#include "engine/warm_start_load.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "engine/job_builder.hpp"
#include "engine/trial_objectives.hpp"
#include "study/warm_start.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

struct Source {
  std::vector<db::WarmStartRow> rows;
  std::string note;
};

// One source: read it, place its trials. Errors go to `errors` (where = key).
std::optional<Source> load_one(const StudySpec& spec, std::size_t i, const std::string& own_db, const db::Storage* own,
                               std::vector<Error>& errors) {
  const auto& w = spec.search.warm_start[i];
  // Each error names the key of the entry it concerns, as the study validator does:
  // "later.yaml:14: search.warm_start[1].db" (no line when unknown: a JSON file).
  auto at = [&](std::string_view key, int line) {
    if (line <= 0) line = w.line;
    return fmt::format("{}{}: search.warm_start[{}]{}{}", spec.source, line > 0 ? fmt::format(":{}", line) : "", i,
                       key.empty() ? "" : ".", key);
  };
  const std::string entry = at("", w.line), study_key = at("study", w.study_line), db_key = at("db", w.db_line);
  auto err_at = [&](const std::string& where, std::string what, std::string fix) {
    errors.push_back(Error{std::move(what), where, std::move(fix)});
    return std::nullopt;
  };
  auto err = [&](std::string what, std::string fix) { return err_at(db_key, std::move(what), std::move(fix)); };
  fs::path path = w.db;
  if (path.is_relative()) path = spec.study_dir / path;
  std::error_code ec;
  path = fs::absolute(path, ec).lexically_normal();
  // This study's own database, even before its first submit creates it: refused before
  // anything is looked up in it (the study is not in it yet on a first submit).
  const bool own_file = [&] {
    if (own_db.empty()) return false;
    if (fs::exists(path, ec) && fs::exists(own_db, ec)) return fs::equivalent(path, own_db, ec);
    return path == fs::absolute(own_db, ec).lexically_normal();
  }();
  if (own_file && w.study == spec.name)
    return err_at(study_key, fmt::format("a study cannot warm-start from itself ('{}' in {} is this study)", w.study,
                                         path.string()),
                  "name an earlier study, or remove this entry");
  if (!fs::exists(path, ec))
    return err(fmt::format("the database {} does not exist", path.string()),
               w.db.starts_with("~") ? "`~` is not expanded here: give the full path of the earlier study's database, or "
                                       "one relative to this study file"
                                     : "give the earlier study's database (`--db` of its submit), relative to this study "
                                       "file");
  if (fs::is_directory(path, ec))
    return err(fmt::format("{} is a directory, not a database", path.string()), "give the database file");
  const bool same_file = own_file;
  std::unique_ptr<db::Storage> opened;
  const db::Storage* s = same_file ? own : nullptr;
  if (!s) {
    auto o = db::Storage::open_readonly(path);
    if (!o)  // the storage's fix speaks of --db; here the key is search.warm_start[i].db
      return err(fmt::format("cannot read the database {}: {}", path.string(), o.error().what),
                 "point db at the dlsweep database the earlier study was submitted with (its `--db`)" +
                     (o.error().fix.empty() || o.error().fix.find("--db") != std::string::npos ? std::string()
                                                                                             : "; " + o.error().fix));
    opened = std::move(*o);
    s = opened.get();
  }
  auto damaged = [&](const Error& e) {
    return err(fmt::format("cannot read study '{}' in {}: {}", w.study, path.string(), e.message()),
               "check the database (`sqlite3 DB 'PRAGMA integrity_check'`), or remove this entry");
  };
  auto row = s->find_study(w.study);
  if (!row) return damaged(row.error());
  if (!*row) {
    std::string names;
    if (auto all = s->list_studies())
      for (const auto& st : *all) names += (names.empty() ? "" : ", ") + st.name;
    return err_at(study_key,
                  fmt::format("the database {} holds no study named '{}'{}", path.string(), w.study,
                              names.empty() ? " (it holds none)" : fmt::format(" (it holds: {})", names)),
                  "name a study of that database (`dlsweep --db PATH status` lists them)");
  }
  auto earlier = parse_study((*row)->spec_json, StudyFormat::json, fmt::format("{} (study {})", path.string(), w.study));
  if (!earlier)
    return err_at(study_key,
                  fmt::format("the stored spec of study '{}' in {} does not validate: {}", w.study, path.string(),
                              earlier.error().front().message()),
                  "warm-start from a study this dlsweep can read");
  auto trials = s->list_trials((*row)->id);
  if (!trials) return damaged(trials.error());
  auto summaries = s->summaries((*row)->id);
  if (!summaries) return damaged(summaries.error());
  std::map<std::int64_t, const db::TrialSummary*> by_id;
  for (const auto& sm : *summaries) by_id[sm.trial_id] = &sm;
  // The metrics this study's objectives and constraints read.
  std::vector<std::string> metrics{spec.objective.metric};
  for (const auto& m : extra_metrics(spec)) metrics.push_back(m);
  std::map<std::string, std::map<std::int64_t, std::vector<db::Storage::MetricPoint>>> points;
  for (const auto& m : metrics) {
    auto got = s->metric_points((*row)->id, m);
    if (!got) return damaged(got.error());
    points[m] = std::move(*got);
  }
  std::vector<EarlierTrial> complete;
  for (const auto& t : *trials) {
    if (t.state != TrialState::complete) continue;
    EarlierTrial e;
    e.number = t.number;
    e.params = t.params;
    TrialFigures& f = e.figures;
    f.ranks = trial_ranks(*earlier, t.params);
    if (auto it = by_id.find(t.id); it != by_id.end()) {
      const auto& sm = *it->second;
      e.best_value = sm.best_value;
      e.last_value = sm.value;
      if (sm.steps_to_target) f.steps_to_target = double(*sm.steps_to_target);
      if (sm.samples_to_target) f.samples_to_target = double(*sm.samples_to_target);
      f.time_to_target_s = sm.time_to_target_s;
      f.wall_s = sm.wall_s;
      if (sm.samples_per_s) f.add_metric("samples_per_s", *sm.samples_per_s);
    }
    for (const auto& [name, by_trial] : points)
      if (auto c = by_trial.find(t.id); c != by_trial.end()) {
        for (const auto& p : c->second) f.add_metric(name, p.value);
        if (name == spec.objective.metric && !c->second.empty()) {
          f.last_samples = double(c->second.back().samples);
          f.last_eval_wall_s = c->second.back().wall_s;
        }
      }
    complete.push_back(std::move(e));
  }
  std::sort(complete.begin(), complete.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  auto placed = place_warm_trials(spec, *earlier, complete);
  if (!placed) {
    for (const auto& p : placed.error())
      errors.push_back(Error{fmt::format("study '{}' in {}: {}", w.study, path.string(), p.what), entry, p.fix});
    return std::nullopt;
  }
  Source out;
  for (const auto& t : placed->trials)
    out.rows.push_back(db::WarmStartRow{0, path.string(), w.study, t.source_number, t.params, t.value, t.values,
                                        t.constraints});
  const std::string skipped = placed->skip_note();
  out.note = fmt::format("warm start: {} of study '{}' ({}){}", placed->trials.size() == 1 ? "1 COMPLETE trial"
                                                                 : fmt::format("{} COMPLETE trials", placed->trials.size()),
                         w.study, path.string(), skipped.empty() ? "" : "; " + skipped);
  return out;
}

}  // namespace

std::string WarmStartLoad::summary() const {
  std::string out;
  for (const auto& n : notes) out += (out.empty() ? "" : " | ") + n;
  return out;
}

std::expected<WarmStartLoad, std::vector<Error>> load_warm_start(const StudySpec& spec, const std::string& own_db,
                                                                  const db::Storage* own) {
  std::vector<Error> errors;
  WarmStartLoad out;
  for (std::size_t i = 0; i < spec.search.warm_start.size(); ++i)
    if (auto src = load_one(spec, i, own_db, own, errors)) {
      for (auto& r : src->rows) out.rows.push_back(std::move(r));
      out.notes.push_back(std::move(src->note));
    }
  if (!errors.empty()) return std::unexpected(std::move(errors));
  const auto n = static_cast<std::int64_t>(out.rows.size());
  for (std::int64_t k = 0; k < n; ++k) out.rows[std::size_t(k)].number = k - n;
  return out;
}

std::vector<search::TrialRecord> warm_history(const std::vector<db::WarmStartRow>& rows) {
  std::vector<search::TrialRecord> out;
  for (const auto& r : rows) {
    search::TrialRecord rec;
    rec.number = r.number;
    rec.params = r.params;
    rec.status = search::TrialStatus::complete;
    rec.value = r.value;
    rec.values = r.values;
    rec.constraints = r.constraints;
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace dlsweep::orch
