// metric_series.cpp — the read side of a report's curves: the chosen metrics of every
// eval/final record of each trial's current attempt, in one statement (bound values only;
// the names come from the study file and are never spliced into the SQL).
#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

Result<std::vector<SeriesPoint>> Storage::metric_series(std::int64_t study_id,
                                                       const std::vector<std::string>& names) const {
  std::vector<SeriesPoint> out;
  if (names.empty()) return out;
  // The names go in as one JSON array bound to ?2 (json_each), so any count is one statement.
  std::string list = "[";
  for (std::size_t i = 0; i < names.size(); ++i) {
    nlohmann::json n = names[i];
    list += (i ? "," : "") + n.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  list += "]";
  auto st = Statement::prepare(db_,
      "SELECT m.trial_id, m.seq, m.step, m.samples, m.wall_s, m.name, m.value FROM metrics m "
      "JOIN trials t ON t.id = m.trial_id AND t.attempt = m.attempt "
      "WHERE t.study_id = ?1 AND m.kind IN ('eval', 'final') "
      "AND m.name IN (SELECT value FROM json_each(?2)) "
      "ORDER BY m.trial_id, m.seq, m.name");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  st->bind(2, list);
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    SeriesPoint p;
    p.trial_id = st->int64(0);
    p.seq = st->int64(1);
    p.step = st->int64(2);
    p.samples = st->int64(3);
    p.wall_s = st->real(4);
    p.name = st->text(5);
    if (!st->is_null(6)) p.value = st->real(6);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace dlsweep::db
