// study_feed.cpp — see study_feed.hpp.
#include "serve/study_feed.hpp"

#include <chrono>

#include <fmt/format.h>

namespace dlsweep::serve {
namespace {

using nlohmann::json;

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

json opt(const auto& v) { return v ? json(*v) : json(nullptr); }

json study_header(const db::StudyRow& s) {
  return json{{"id", s.id},
              {"name", s.name},
              {"state", s.state},
              {"objective", {{"metric", s.objective_metric}, {"mode", s.objective_mode}, {"target", opt(s.objective_target)}}},
              {"created_at", s.created_at}};
}

Document dump(const json& j) {
  // Invalid UTF-8 in a message or param is replaced, never thrown on.
  return std::make_shared<const std::string>(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

Result<json> basic_study_document(const db::Storage& storage, const db::StudyRow& study) {
  auto sums = storage.summaries(study.id);
  if (!sums) return std::unexpected(sums.error());
  json trials = json::array();
  std::map<std::int64_t, std::size_t> index;
  for (const auto& t : *sums) {
    index[t.trial_id] = trials.size();
    trials.push_back(json{{"id", t.trial_id}, {"number", t.number}, {"state", t.state}, {"attempt", t.attempt},
                          {"params", t.params}, {"value", opt(t.value)}, {"best_value", opt(t.best_value)},
                          {"steps_to_target", opt(t.steps_to_target)}, {"time_to_target_s", opt(t.time_to_target_s)},
                          {"samples_to_target", opt(t.samples_to_target)}, {"samples_per_s", opt(t.samples_per_s)},
                          {"wall_s", opt(t.wall_s)}, {"message", t.message}, {"curve", json::array()}});
  }
  // The objective's eval/final values of each trial's current attempt (study id is an integer).
  auto curves = storage.query(fmt::format(
      "SELECT m.trial_id, m.step, m.samples, m.wall_s, m.value FROM metrics m "
      "JOIN trials t ON t.id = m.trial_id JOIN studies s ON s.id = t.study_id "
      "WHERE t.study_id = {} AND m.name = s.objective_metric AND m.kind IN ('eval', 'final') "
      "AND m.attempt = t.attempt ORDER BY m.trial_id, m.seq",
      study.id));
  if (!curves) return std::unexpected(curves.error());
  for (const auto& row : curves->rows) {
    auto it = index.find(row[0].get<std::int64_t>());
    if (it == index.end()) continue;
    trials[it->second]["curve"].push_back(json::array({row[1], row[2], row[3], row[4]}));
  }
  return json{{"study", study_header(study)}, {"trials", std::move(trials)}};
}

StudyFeed::StudyFeed(std::unique_ptr<db::Storage> storage, DocBuilder builder, double min_rebuild_s, Clock clock)
    : storage_(std::move(storage)),
      builder_(builder ? std::move(builder) : DocBuilder(basic_study_document)),
      min_rebuild_s_(min_rebuild_s),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)) {}

Result<std::int64_t> StudyFeed::data_version() const {
  auto r = storage_->query("PRAGMA data_version");
  if (!r) return std::unexpected(r.error());
  if (r->rows.empty() || r->rows[0].empty() || !r->rows[0][0].is_number_integer())
    return fail("PRAGMA data_version returned no number", "dlsweep serve");
  return r->rows[0][0].get<std::int64_t>();
}

bool StudyFeed::fresh(const Entry& e, std::int64_t version) const {
  if (!e.doc) return false;
  if (e.version == version) return true;
  return clock_() - e.built_at < min_rebuild_s_;  // changed, but rebuilt very recently
}

Result<Document> StudyFeed::studies() {
  auto v = data_version();
  if (!v) return std::unexpected(v.error());
  if (fresh(studies_, *v)) return studies_.doc;
  auto rows = storage_->list_studies();
  if (!rows) return std::unexpected(rows.error());
  json out = json::array();
  for (const auto& s : *rows) {
    json j = study_header(s);
    auto counts = storage_->state_counts(s.id);
    if (!counts) return std::unexpected(counts.error());
    json c = json::object();
    std::int64_t total = 0;
    for (const auto& [state, n] : *counts) {
      c[state] = n;
      total += n;
    }
    j["counts"] = std::move(c);
    j["trials"] = total;
    out.push_back(std::move(j));
  }
  ++builds_;
  studies_ = Entry{dump(out), *v, clock_()};
  return studies_.doc;
}

Result<std::optional<Document>> StudyFeed::study(const std::string& name) {
  auto v = data_version();
  if (!v) return std::unexpected(v.error());
  auto it = per_study_.find(name);
  if (it != per_study_.end() && fresh(it->second, *v)) return std::optional<Document>(it->second.doc);
  auto row = storage_->find_study(name);
  if (!row) return std::unexpected(row.error());
  if (!*row) {
    // Not cached: names that do not exist must not grow the cache.
    if (it != per_study_.end()) per_study_.erase(it);
    return std::optional<Document>{};
  }
  auto doc = builder_(*storage_, **row);
  if (!doc) return std::unexpected(doc.error());
  ++builds_;
  Entry e{dump(*doc), *v, clock_()};
  per_study_[name] = e;
  return std::optional<Document>(e.doc);
}

}  // namespace dlsweep::serve
