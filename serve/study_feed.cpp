// study_feed.cpp — see study_feed.hpp.
#include "serve/study_feed.hpp"

#include <algorithm>

#include <chrono>

#include "common/site_limit_note.hpp"
#include "report/report_model.hpp"

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

Result<json> report_document(const db::Storage& storage, const db::StudyRow& study) {
  return report::build_report_model(storage, study.name);
}

StudyFeed::StudyFeed(std::unique_ptr<db::Storage> storage, DocBuilder builder, double min_rebuild_s, Clock clock)
    : storage_(std::move(storage)),
      builder_(builder ? std::move(builder) : DocBuilder(report_document)),
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
  // Changed, but rebuilt very recently (for its cost).
  return clock_() - e.built_at < std::max(min_rebuild_s_, kBuildShare * e.cost_s);
}

Result<Document> StudyFeed::studies() {
  auto v = data_version();
  if (!v) return std::unexpected(v.error());
  if (fresh(studies_, *v)) return studies_.doc;
  const double start = clock_();
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
    // A site limit the orchestrator learned, while the study runs (as `dlsweep status` says it).
    if (s.state == "RUNNING") {
      auto ev = storage_->latest_event(s.id, kSiteLimitEventKind);
      if (!ev) return std::unexpected(ev.error());
      if (*ev)
        j["site_limit"] = site_limit_line((*ev)->reason, c.value("QUEUED", std::int64_t{0}) + c.value("RUNNING", std::int64_t{0}),
                                          c.value("WAITING", std::int64_t{0}), (*ev)->who);
    }
    j["counts"] = std::move(c);
    j["trials"] = total;
    out.push_back(std::move(j));
  }
  ++builds_;
  auto text = dump(out);
  const double end = clock_();
  studies_ = Entry{std::move(text), *v, end, end - start};
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
  const double start = clock_();
  auto doc = builder_(*storage_, **row);
  if (!doc) return std::unexpected(doc.error());
  ++builds_;
  auto text = dump(*doc);
  const double end = clock_();
  Entry e{std::move(text), *v, end, end - start};
  per_study_[name] = e;
  return std::optional<Document>(e.doc);
}

}  // namespace dlsweep::serve
