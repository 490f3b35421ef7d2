// storage.cpp — studies, jobs, the event log and write batches. Opening (and where the
// database lives) is in storage_open.cpp, trials in trials.cpp, metric ingestion in
// ingest.cpp, the read side in read_query.cpp.
//
// Invariants:
//  - Each mutating call is one transaction; its event row commits or rolls back with it.
//  - A committed batch that holds a new trial is published before commit_batch returns
//    (snapshot mode, storage.hpp): what the caller launches next is on the shared file.
#include <memory>
#include <system_error>

#include "common/objective.hpp"
#include "db/schema.hpp"
#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace fs = std::filesystem;

namespace dlsweep::db {
namespace {

StudyRow read_study(const Statement& st) {
  StudyRow r;
  r.id = st.int64(0);
  r.name = st.text(1);
  r.spec_json = st.text(2);
  r.source_path = st.text(3);
  r.root_dir = st.text(4);
  r.objective_metric = st.text(5);
  r.objective_mode = st.text(6);
  r.objective_target = st.opt_real(7);
  r.state = st.text(8);
  r.created_at = st.real(9);
  r.home_db = st.text(10);
  r.home_root = st.text(11);
  return r;
}

constexpr const char* kStudyColumns =
    "SELECT id, name, spec_json, source_path, root_dir, objective_metric, objective_mode, "
    "objective_target, state, created_at, home_db, home_root FROM studies ";

bool valid_study_state(const std::string& s) { return s == "RUNNING" || s == "FINISHED" || s == "STOPPED"; }

// Appends an event; the caller owns the transaction.
Result<std::int64_t> insert_event(sqlite3* db, const EventRow& e) {
  auto st = Statement::prepare(db,
      "INSERT INTO events(study_id, trial_id, at, who, kind, from_state, to_state, attempt, reason) "
      "VALUES(?1, ?2, ?3, ?4, ?5, NULLIF(?6, ''), NULLIF(?7, ''), ?8, ?9)");
  if (!st) return std::unexpected(st.error());
  st->bind(1, e.study_id).bind(2, e.trial_id).bind(3, e.at > 0 ? e.at : now_unix_seconds());
  st->bind(4, e.who).bind(5, e.kind).bind(6, e.from_state).bind(7, e.to_state);
  st->bind(8, e.attempt).bind(9, e.reason);
  if (auto s = st->run(); !s) return std::unexpected(s.error());
  return sqlite3_last_insert_rowid(db);
}

}  // namespace

int Storage::schema_version() const {
  auto st = Statement::prepare(db_, "PRAGMA user_version");
  if (!st) return 0;
  auto row = st->step();
  return row && *row ? static_cast<int>(st->int64(0)) : 0;
}

// --- write batches

Status Storage::begin_batch() {
  if (in_batch_) return fail("a write batch is already open", file_.string(), "commit it first (a bug in the caller)");
  if (read_only_)
    return fail("cannot write: this database handle is read-only", file_.string(),
                "only the orchestrator (`dlsweep submit` / `resume`) writes the database");
  if (auto s = exec(db_, "BEGIN IMMEDIATE", "starting a write batch"); !s) return s;
  in_batch_ = true;
  return {};
}

Status Storage::commit_batch() {
  if (!in_batch_) return {};
  in_batch_ = false;
  if (sqlite3_get_autocommit(db_) != 0) {
    publish_pending_ = false;
    return fail("a write batch was rolled back by SQLite after an error; its writes are lost", file_.string(),
                "see the error before this one");
  }
  auto s = exec(db_, "COMMIT", "committing a write batch");
  if (!s) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    publish_pending_ = false;
    return s;
  }
  return publish_if_pending();
}

// --- studies

Result<std::int64_t> Storage::create_study(const NewStudy& s) {
  const std::string where = file_.string() + ": study '" + s.name + "'";
  if (s.name.empty()) return fail("a study needs a name", file_.string(), "set `name:` in the study file");
  if (!valid_mode(s.objective_mode))
    return fail("objective mode must be 'min' or 'max', got '" + s.objective_mode + "'", where,
                "set objective.mode to min or max");
  if (s.objective_metric.empty())
    return fail("the study has no objective metric", where, "set objective.metric (e.g. val_acc)");
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto existing = find_study(s.name);
  if (!existing) return std::unexpected(existing.error());
  if (*existing)
    return fail("study '" + s.name + "' already exists in " + file_.string(), where,
                "use `dlsweep resume " + s.name + "` or pick another name");
  auto ins = Statement::prepare(db_,
      "INSERT INTO studies(name, spec_json, source_path, root_dir, objective_metric, objective_mode, "
      "objective_target, state, created_at, home_db, home_root) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 'RUNNING', ?8, ?9, ?10)");
  if (!ins) return std::unexpected(ins.error());
  const double now = now_unix_seconds();
  ins->bind(1, s.name).bind(2, s.spec_json).bind(3, s.source_path).bind(4, s.root_dir);
  ins->bind(5, s.objective_metric).bind(6, s.objective_mode).bind(7, s.objective_target).bind(8, now);
  ins->bind(9, s.home_db).bind(10, s.home_root);
  if (auto r = ins->run(); !r) return fail_in(r.error(), "creating study '" + s.name + "'");
  const std::int64_t id = sqlite3_last_insert_rowid(db_);
  EventRow ev;
  ev.study_id = id;
  ev.at = now;
  ev.who = "orchestrator";
  ev.kind = "study";
  ev.to_state = "RUNNING";
  ev.reason = "created from " + (s.source_path.empty() ? std::string("(no file)") : s.source_path);
  if (auto e = insert_event(db_, ev); !e) return std::unexpected(e.error());
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  publish_pending_ = true;  // snapshot mode: on the shared file before this returns
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return id;
}

Result<std::optional<StudyRow>> Storage::find_study(const std::string& name) const {
  auto st = Statement::prepare(db_, std::string(kStudyColumns) + "WHERE name = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, name);
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<StudyRow>{};
  return std::optional<StudyRow>(read_study(*st));
}

Result<std::vector<StudyRow>> Storage::list_studies() const {
  auto st = Statement::prepare(db_, std::string(kStudyColumns) + "ORDER BY id");
  if (!st) return std::unexpected(st.error());
  std::vector<StudyRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back(read_study(*st));
  }
  return out;
}

Status Storage::set_study_state(std::int64_t study_id, const std::string& state, const std::string& reason) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id);
  if (!valid_study_state(state))
    return fail("unknown study state '" + state + "'", where, "use RUNNING, FINISHED or STOPPED");
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto cur = Statement::prepare(db_, "SELECT state FROM studies WHERE id = ?1");
  if (!cur) return std::unexpected(cur.error());
  cur->bind(1, study_id);
  auto row = cur->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail("no such study", where, "list studies with `dlsweep status`");
  EventRow ev;
  ev.study_id = study_id;
  ev.who = "orchestrator";
  ev.kind = "study";
  ev.from_state = cur->text(0);
  ev.to_state = state;
  ev.reason = reason;
  auto upd = Statement::prepare(db_, "UPDATE studies SET state = ?1 WHERE id = ?2");
  if (!upd) return std::unexpected(upd.error());
  upd->bind(1, state).bind(2, study_id);
  if (auto s = upd->run(); !s) return s;
  if (auto e = insert_event(db_, ev); !e) return std::unexpected(e.error());
  return tx->commit();
}

// --- events

namespace {

constexpr const char* kEventColumns =
    "SELECT id, trial_id, study_id, at, who, kind, COALESCE(from_state, ''), COALESCE(to_state, ''), "
    "attempt, reason FROM events ";

EventRow event_row(Statement& st) {
  EventRow e;
  e.id = st.int64(0);
  e.trial_id = st.opt_int64(1);
  e.study_id = st.int64(2);
  e.at = st.real(3);
  e.who = st.text(4);
  e.kind = st.text(5);
  e.from_state = st.text(6);
  e.to_state = st.text(7);
  e.attempt = static_cast<int>(st.int64(8));
  e.reason = st.text(9);
  return e;
}

}  // namespace

Result<std::vector<EventRow>> Storage::events(std::int64_t study_id) const {
  auto st = Statement::prepare(db_, std::string(kEventColumns) + "WHERE study_id = ?1 ORDER BY id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<EventRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back(event_row(*st));
  }
  return out;
}

Result<std::optional<EventRow>> Storage::latest_event(std::int64_t study_id, const std::string& kind) const {
  auto st = Statement::prepare(db_, std::string(kEventColumns) + "WHERE study_id = ?1 AND kind = ?2 ORDER BY id DESC LIMIT 1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  st->bind(2, kind);
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<EventRow>{};
  return std::optional<EventRow>(event_row(*st));
}

Result<std::int64_t> Storage::note_event(const EventRow& e) {
  if (e.kind.empty()) return fail("an event needs a kind", file_.string() + ": events");
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto id = insert_event(db_, e);
  if (!id) {
    return fail_in(id.error(), "recording event '" + e.kind + "' for study id " + std::to_string(e.study_id) +
                                   " (does the study/trial exist?)");
  }
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  return *id;
}

// --- jobs

Status Storage::record_job(const JobRow& j) {
  const std::string where = file_.string() + ": job " + j.backend + ":" + j.job_id;
  if (j.backend.empty() || j.job_id.empty())
    return fail("a job needs a backend and a job id", where);
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto trial = Statement::prepare(db_, "SELECT 1 FROM trials WHERE id = ?1");
  if (!trial) return std::unexpected(trial.error());
  trial->bind(1, j.trial_id);
  auto found = trial->step();
  if (!found) return std::unexpected(found.error());
  if (!*found) return fail("trial id " + std::to_string(j.trial_id) + " does not exist", where);
  auto st = Statement::prepare(db_,
      "INSERT INTO jobs(trial_id, attempt, backend, job_id, state, submitted_at, updated_at) "
      "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?6) "
      "ON CONFLICT(backend, job_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at");
  if (!st) return std::unexpected(st.error());
  st->bind(1, j.trial_id).bind(2, j.attempt).bind(3, j.backend).bind(4, j.job_id).bind(5, j.state);
  st->bind(6, now_unix_seconds());
  if (auto s = st->run(); !s) return fail_in(s.error(), where);
  return tx->commit();
}

Result<std::vector<JobRow>> Storage::list_jobs(std::int64_t study_id) const {
  auto st = Statement::prepare(db_,
      "SELECT j.trial_id, j.attempt, j.backend, j.job_id, j.state FROM jobs j "
      "JOIN trials t ON t.id = j.trial_id WHERE t.study_id = ?1 ORDER BY j.id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<JobRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.push_back(JobRow{st->int64(0), static_cast<int>(st->int64(1)), st->text(2), st->text(3), st->text(4)});
  }
  return out;
}

}  // namespace dlsweep::db
