// export_read.cpp — the read side behind `dlsweep results --format csv|json` and
// `dlsweep export`: each trial's start and end (from the events log) and the long-form
// curves (every row of `metrics`, with the trial's number instead of its database id).
//
// Invariants: both are read-only; curves are streamed row by row in a stable order (trial
// number, attempt, seq, metric name), so an export of millions of points needs no memory
// beyond one row, and two exports of the same database are byte-identical.
#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

Result<std::map<std::int64_t, TrialTimes>> Storage::trial_times(std::int64_t study_id) const {
  // One pass over the study's events (index events_by_study). ended_at only counts a
  // transition into the final state the trial is in now: a rerun trial is not "ended"
  // by the CANCELLED it left behind.
  auto st = Statement::prepare(db_,
      "SELECT e.trial_id, "
      "  min(CASE WHEN e.to_state = 'RUNNING' THEN e.at END), "
      "  max(CASE WHEN e.to_state = t.state AND t.state IN ('COMPLETE', 'PRUNED', 'FAILED', 'CANCELLED') "
      "           THEN e.at END) "
      "FROM events e JOIN trials t ON t.id = e.trial_id "
      "WHERE e.study_id = ?1 AND e.kind = 'transition' "
      "GROUP BY e.trial_id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::map<std::int64_t, TrialTimes> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out[st->int64(0)] = TrialTimes{st->opt_real(1), st->opt_real(2)};
  }
  return out;
}

Status Storage::for_each_curve_point(std::int64_t study_id,
                                     const std::function<Status(const CurvePoint&)>& visit) const {
  auto st = Statement::prepare(db_,
      "SELECT t.number, m.attempt, m.seq, m.kind, m.step, m.epoch, m.samples, m.wall_s, m.name, m.value "
      "FROM trials t JOIN metrics m ON m.trial_id = t.id "
      "WHERE t.study_id = ?1 "
      "ORDER BY t.number, m.attempt, m.seq, m.name");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  CurvePoint p;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    p.number = st->int64(0);
    p.attempt = static_cast<int>(st->int64(1));
    p.seq = st->int64(2);
    p.kind = st->text(3);
    p.step = st->int64(4);
    p.epoch = st->real(5);
    p.samples = st->int64(6);
    p.wall_s = st->real(7);
    p.name = st->text(8);
    p.value = st->opt_real(9);
    if (auto s = visit(p); !s) return s;
  }
  return {};
}

}  // namespace dlsweep::db
