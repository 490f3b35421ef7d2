// ingest.cpp — storing a trial's metrics.jsonl records in the database.
//
// Invariants:
//  - Idempotent: records are keyed by (trial_id, attempt, seq) and metrics by (trial_id,
//    attempt, seq, name); INSERT OR IGNORE makes re-reading a whole file after a crash or
//    on `dlsweep resume` a no-op for the lines already stored. The first version of a
//    (trial, attempt, seq) wins; a program that reuses a seq cannot rewrite history.
//  - One transaction per call: a batch is stored whole or not at all.
//  - Metrics are long form (one row per name) and repeat the record's kind, step, epoch,
//    samples and wall_s so that a curve is one SELECT with no join. NaN is stored as NULL.
#include <cmath>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

Result<std::size_t> Storage::ingest(std::int64_t trial_id, int attempt, const std::vector<protocol::Record>& records) {
  const std::string where =
      file_.string() + ": trial id " + std::to_string(trial_id) + ", attempt " + std::to_string(attempt);
  if (records.empty()) return std::size_t{0};
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());

  auto trial = Statement::prepare(db_, "SELECT 1 FROM trials WHERE id = ?1");
  if (!trial) return std::unexpected(trial.error());
  trial->bind(1, trial_id);
  auto found = trial->step();
  if (!found) return std::unexpected(found.error());
  if (!*found) return fail("cannot store metrics: no trial with id " + std::to_string(trial_id), where);

  auto rec = Statement::prepare(db_,
      "INSERT OR IGNORE INTO records(trial_id, attempt, seq, kind, step, epoch, samples, wall_s, text) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  if (!rec) return std::unexpected(rec.error());
  auto met = Statement::prepare(db_,
      "INSERT OR IGNORE INTO metrics(trial_id, attempt, seq, kind, step, epoch, samples, wall_s, name, value) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  if (!met) return std::unexpected(met.error());

  std::size_t added = 0;
  for (const protocol::Record& r : records) {
    const std::string_view kind = protocol::to_string(r.kind);
    rec->bind(1, trial_id).bind(2, attempt).bind(3, r.seq).bind(4, kind).bind(5, r.step);
    rec->bind(6, r.epoch).bind(7, r.samples).bind(8, r.wall_s).bind(9, r.text);
    if (auto s = rec->run(); !s) return fail_in(s.error(), where + ", seq " + std::to_string(r.seq));
    rec->reset();
    if (rec->changes() == 0) continue;  // already stored: its metrics came with it
    ++added;
    for (const auto& [name, value] : r.metrics) {
      met->bind(1, trial_id).bind(2, attempt).bind(3, r.seq).bind(4, kind).bind(5, r.step);
      met->bind(6, r.epoch).bind(7, r.samples).bind(8, r.wall_s).bind(9, name);
      if (std::isnan(value)) met->bind_null(10);
      else met->bind(10, value);
      if (auto s = met->run(); !s)
        return fail_in(s.error(), where + ", seq " + std::to_string(r.seq) + ", metric '" + name + "'");
      met->reset();
    }
  }
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  return added;
}

}  // namespace dlsweep::db
