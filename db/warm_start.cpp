// warm_start.cpp — the `warm_start_trials` table: the COMPLETE trials of earlier studies a
// study's `search.warm_start` copied in at submit (schema version 4). Written once, with
// the study's 'warm_start' event, in one transaction; read by the sweep (submit and resume)
// into the sampler's history, and by `results`/`status`/the report to show them.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

namespace {

std::vector<double> numbers_of(const std::string& text) {
  std::vector<double> out;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_array())
    for (const auto& v : j)
      out.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::infinity());
  return out;
}

nlohmann::json numbers_json(const std::vector<double>& v) {
  // JSON has no infinity: an infinite violation (a figure the trial lacks) is written as a
  // huge number and read back as it.
  nlohmann::json out = nlohmann::json::array();
  for (double x : v) out.push_back(std::isfinite(x) ? x : (x > 0 ? 1e308 : -1e308));
  return out;
}

}  // namespace

Status Storage::add_warm_start_trials(std::int64_t study_id, const std::vector<WarmStartRow>& rows,
                                      const std::string& note) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id) + ": warm_start_trials";
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  const double now = now_unix_seconds();
  auto ins = Statement::prepare(db_,
      "INSERT INTO warm_start_trials(study_id, number, source_db, source_study, source_number, params_json, value, "
      "values_json, constraints_json, created_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  if (!ins) return std::unexpected(ins.error());
  for (const auto& r : rows) {
    ins->bind(1, study_id).bind(2, r.number).bind(3, r.source_db).bind(4, r.source_study).bind(5, r.source_number)
        .bind(6, r.params.dump()).bind(7, r.value).bind(8, numbers_json(r.values).dump())
        .bind(9, numbers_json(r.constraints).dump()).bind(10, now);
    if (auto s = ins->run(); !s) return fail_in(s.error(), where);
  }
  auto ev = Statement::prepare(db_,
      "INSERT INTO events(study_id, trial_id, at, who, kind, from_state, to_state, attempt, reason) "
      "VALUES(?1, NULL, ?2, 'orchestrator', 'warm_start', NULL, NULL, 0, ?3)");
  if (!ev) return std::unexpected(ev.error());
  ev->bind(1, study_id).bind(2, now).bind(3, note);
  if (auto s = ev->run(); !s) return fail_in(s.error(), where);
  if (auto c = tx->commit(); !c) return c;
  publish_pending_ = true;
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return {};
}

Result<std::vector<WarmStartRow>> Storage::warm_start_trials(std::int64_t study_id) const {
  auto st = Statement::prepare(db_,
      "SELECT number, source_db, source_study, source_number, params_json, value, values_json, constraints_json "
      "FROM warm_start_trials WHERE study_id = ?1 ORDER BY number");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<WarmStartRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    WarmStartRow r;
    r.number = st->int64(0);
    r.source_db = st->text(1);
    r.source_study = st->text(2);
    r.source_number = st->int64(3);
    r.params = nlohmann::json::parse(st->text(4), nullptr, /*allow_exceptions=*/false);
    if (!r.params.is_object())
      return fail(fmt::format("warm-start trial {} has params that are not a JSON object", r.number), file_.string(),
                  "the database was edited by hand; restore the value");
    r.value = st->real(5);
    r.values = numbers_of(st->text(6));
    r.constraints = numbers_of(st->text(7));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dlsweep::db
