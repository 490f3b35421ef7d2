// study_delete.cpp — counting and deleting every row of one study (`dlsweep delete`,
// `dlsweep submit --replace`).
//
// Invariants:
//  - delete_study is one transaction: the rows of every table go together or none does (an
//    error at any step rolls back the steps before it).
//  - The tables are found in the schema, not listed here: every table with a study_id column
//    (rows of the study) or a trial_id column (rows of its trials) is included, so a table a
//    later schema adds cannot be left behind holding rows of a deleted study.
//  - Counts are taken inside the deleting transaction before anything is deleted, so
//    rows removed by ON DELETE CASCADE (which sqlite3_changes does not count) are counted.
#include <algorithm>
#include <array>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {
namespace {

// A table holding rows of a study: by its study_id, by its trials' trial_id, or both.
struct OwnedTable {
  std::string name;
  bool by_study = false;
  bool by_trial = false;
};

// The order the tables are listed (and deleted) in: children before parents, then any
// table this file does not know, by name.
constexpr std::array<std::string_view, 6> kKnownOrder = {"params", "metrics", "records", "jobs", "events",
                                                        "enqueued_trials"};

std::size_t rank(const std::string& table) {
  auto it = std::find(kKnownOrder.begin(), kKnownOrder.end(), table);
  return static_cast<std::size_t>(it - kKnownOrder.begin());
}

Result<std::vector<OwnedTable>> owned_tables(sqlite3* db) {
  auto st = Statement::prepare(db,
      "SELECT m.name, max(p.name = 'study_id'), max(p.name = 'trial_id') "
      "FROM sqlite_schema m JOIN pragma_table_info(m.name) p "
      "WHERE m.type = 'table' AND m.name NOT IN ('studies', 'trials') AND m.name NOT LIKE 'sqlite_%' "
      "GROUP BY m.name HAVING max(p.name IN ('study_id', 'trial_id')) = 1");
  if (!st) return std::unexpected(st.error());
  std::vector<OwnedTable> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back({st->text(0), st->int64(1) != 0, st->int64(2) != 0});
  }
  std::sort(out.begin(), out.end(), [](const OwnedTable& a, const OwnedTable& b) {
    return std::pair(rank(a.name), a.name) < std::pair(rank(b.name), b.name);
  });
  return out;
}

std::string quoted(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The WHERE clause selecting the study's rows of `t` (?1 = the study id).
std::string rows_of_study(const OwnedTable& t) {
  const std::string trial = "trial_id IN (SELECT id FROM trials WHERE study_id = ?1)";
  if (t.by_study && t.by_trial) return "study_id = ?1 OR " + trial;
  return t.by_study ? "study_id = ?1" : trial;
}

Result<std::int64_t> count_where(sqlite3* db, const std::string& table, const std::string& where,
                                 std::int64_t study_id) {
  auto st = Statement::prepare(db, "SELECT count(*) FROM " + quoted(table) + " WHERE " + where);
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  return *row ? st->int64(0) : 0;
}

// Every table's count, studies and trials first. Error when the study does not exist.
Result<StudyRows> count_rows(sqlite3* db, std::int64_t study_id, const std::vector<OwnedTable>& tables,
                             const std::string& file) {
  StudyRows rows;
  auto studies = count_where(db, "studies", "id = ?1", study_id);
  if (!studies) return std::unexpected(studies.error());
  if (*studies == 0)
    return fail_as(ErrorKind::not_found, "no such study", file + ": study id " + std::to_string(study_id),
                   "list the studies with `dlsweep status`");
  rows.by_table.emplace_back("studies", *studies);
  auto trials = count_where(db, "trials", "study_id = ?1", study_id);
  if (!trials) return std::unexpected(trials.error());
  rows.by_table.emplace_back("trials", *trials);
  for (const auto& t : tables) {
    auto n = count_where(db, t.name, rows_of_study(t), study_id);
    if (!n) return std::unexpected(n.error());
    rows.by_table.emplace_back(t.name, *n);
  }
  return rows;
}

Status delete_where(sqlite3* db, const std::string& table, const std::string& where, std::int64_t study_id) {
  auto st = Statement::prepare(db, "DELETE FROM " + quoted(table) + " WHERE " + where);
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  if (auto s = st->run(); !s) return fail_in(s.error(), "deleting from " + table);
  return {};
}

}  // namespace

Result<StudyRows> Storage::count_study_rows(std::int64_t study_id) const {
  auto tables = owned_tables(db_);
  if (!tables) return std::unexpected(tables.error());
  return count_rows(db_, study_id, *tables, file_.string());
}

Result<StudyRows> Storage::delete_study(std::int64_t study_id) {
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto tables = owned_tables(db_);
  if (!tables) return std::unexpected(tables.error());
  auto rows = count_rows(db_, study_id, *tables, file_.string());
  if (!rows) return std::unexpected(rows.error());
  // Children first, so that no foreign key ever points at a row already gone; the check is
  // deferred to the commit anyway (reset by SQLite when the transaction ends).
  if (auto s = exec(db_, "PRAGMA defer_foreign_keys = ON", "deferring foreign key checks"); !s)
    return std::unexpected(s.error());
  for (const auto& t : *tables)
    if (auto s = delete_where(db_, t.name, rows_of_study(t), study_id); !s) return std::unexpected(s.error());
  if (auto s = delete_where(db_, "trials", "study_id = ?1", study_id); !s) return std::unexpected(s.error());
  if (auto s = delete_where(db_, "studies", "id = ?1", study_id); !s) return std::unexpected(s.error());
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  publish_pending_ = true;  // snapshot mode: on the shared file before this returns
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return rows;
}

}  // namespace dlsweep::db
