// schema.cpp — the DDL of every schema version and the migration driver. See schema.hpp
// for the invariants and db/SCHEMA.md for the user-facing description of each table/view.
//
// Conventions of the schema: timestamps are REAL unix seconds; trial states are the upper
// case names of TrialState; NaN metric values are NULL (SQL has no NaN). Views are written
// as correlated subqueries over the (trial_id, name, attempt, seq) index so that asking for
// one study's trials touches only that study's rows.
#include "db/schema.hpp"

#include <string>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {
namespace {

// The trial_summary view, as version 1 created it and version 3 recreates it (its
// trial_objective changed under it).
constexpr const char* kTrialSummaryView = R"sql(
CREATE VIEW trial_summary AS
SELECT t.id AS trial_id, t.study_id, t.number, t.state, t.attempt,
       tp.params,
       o.metric AS objective_metric, o.mode AS objective_mode, o.target AS objective_target,
       o.value, o.best_value,
       tt.steps_to_target, tt.samples_to_target, tt.time_to_target_s,
       (SELECT m.value FROM metrics m
         WHERE m.trial_id = t.id AND m.name = 'samples_per_s'
         ORDER BY m.attempt DESC, m.seq DESC LIMIT 1) AS samples_per_s,
       (SELECT r.wall_s FROM records r
         WHERE r.trial_id = t.id AND r.kind <> 'log'
         ORDER BY r.attempt DESC, r.seq DESC LIMIT 1) AS wall_s,
       t.exit_code, t.message, t.trial_dir, t.created_at, t.updated_at
FROM trials t
JOIN trial_params tp ON tp.trial_id = t.id
JOIN trial_objective o ON o.trial_id = t.id
JOIN time_to_target tt ON tt.trial_id = t.id;
)sql";

// Version 0 -> 1: the initial schema (and kTrialSummaryView after it).
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE studies (
  id               INTEGER PRIMARY KEY,
  name             TEXT NOT NULL UNIQUE,
  spec_json        TEXT NOT NULL,
  source_path      TEXT NOT NULL DEFAULT '',
  root_dir         TEXT NOT NULL DEFAULT '',
  objective_metric TEXT NOT NULL,
  objective_mode   TEXT NOT NULL CHECK (objective_mode IN ('min', 'max')),
  objective_target REAL,
  state            TEXT NOT NULL DEFAULT 'RUNNING' CHECK (state IN ('RUNNING', 'FINISHED', 'STOPPED')),
  created_at       REAL NOT NULL
);

CREATE TABLE trials (
  id         INTEGER PRIMARY KEY,
  study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
  number     INTEGER NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('WAITING', 'QUEUED', 'RUNNING', 'COMPLETE', 'PRUNED', 'FAILED', 'CANCELLED')),
  attempt    INTEGER NOT NULL DEFAULT 0,
  trial_dir  TEXT NOT NULL,
  exit_code  INTEGER,
  message    TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  UNIQUE (study_id, number)
);
CREATE INDEX trials_by_study_state ON trials(study_id, state);

CREATE TABLE params (
  trial_id   INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  name       TEXT NOT NULL,
  value_json TEXT NOT NULL,
  value_num  REAL,
  PRIMARY KEY (trial_id, name)
) WITHOUT ROWID;

CREATE TABLE records (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  attempt  INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  kind     TEXT NOT NULL CHECK (kind IN ('eval', 'checkpoint', 'final', 'log')),
  step     INTEGER NOT NULL,
  epoch    REAL NOT NULL,
  samples  INTEGER NOT NULL,
  wall_s   REAL NOT NULL,
  text     TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (trial_id, attempt, seq)
) WITHOUT ROWID;

CREATE TABLE metrics (
  trial_id INTEGER NOT NULL,
  attempt  INTEGER NOT NULL,
  seq      INTEGER NOT NULL,
  kind     TEXT NOT NULL,
  step     INTEGER NOT NULL,
  epoch    REAL NOT NULL,
  samples  INTEGER NOT NULL,
  wall_s   REAL NOT NULL,
  name     TEXT NOT NULL,
  value    REAL,
  PRIMARY KEY (trial_id, attempt, seq, name),
  FOREIGN KEY (trial_id, attempt, seq) REFERENCES records(trial_id, attempt, seq) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX metrics_by_trial_name ON metrics(trial_id, name, attempt, seq, kind, value);

CREATE TABLE jobs (
  id           INTEGER PRIMARY KEY,
  trial_id     INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  attempt      INTEGER NOT NULL,
  backend      TEXT NOT NULL,
  job_id       TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT '',
  submitted_at REAL NOT NULL,
  updated_at   REAL NOT NULL,
  UNIQUE (backend, job_id)
);
CREATE INDEX jobs_by_trial ON jobs(trial_id, attempt);

CREATE TABLE events (
  id         INTEGER PRIMARY KEY,
  study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
  trial_id   INTEGER REFERENCES trials(id) ON DELETE CASCADE,
  at         REAL NOT NULL,
  who        TEXT NOT NULL,
  kind       TEXT NOT NULL,
  from_state TEXT,
  to_state   TEXT,
  attempt    INTEGER NOT NULL DEFAULT 0,
  reason     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_by_study ON events(study_id, id);
CREATE INDEX events_by_trial ON events(trial_id, id);

-- One row per trial; params as one JSON object {"name": value, ...}.
CREATE VIEW trial_params AS
SELECT t.id AS trial_id, t.study_id, t.number,
       (SELECT json_group_object(p.name, json(p.value_json)) FROM params p WHERE p.trial_id = t.id) AS params
FROM trials t;

-- The latest value of every metric of every trial: highest attempt, then highest seq.
-- (Written so that WHERE trial_id = ? AND name = ? is pushed into the DISTINCT scan.)
CREATE VIEW metric_latest AS
SELECT m.trial_id, m.name, m.value, m.attempt, m.seq, m.kind, m.step, m.epoch, m.samples, m.wall_s
FROM (SELECT DISTINCT trial_id, name FROM metrics) k
JOIN metrics m
  ON m.trial_id = k.trial_id AND m.name = k.name
 AND (m.attempt, m.seq) = (SELECT x.attempt, x.seq FROM metrics x
                           WHERE x.trial_id = k.trial_id AND x.name = k.name
                           ORDER BY x.attempt DESC, x.seq DESC LIMIT 1);

-- Per trial: the study's objective metric, its last value and its best value (max or min
-- by the study's mode), both over eval and final records.
CREATE VIEW trial_objective AS
SELECT t.id AS trial_id, t.study_id,
       s.objective_metric AS metric, s.objective_mode AS mode, s.objective_target AS target,
       (SELECT m.value FROM metrics m
         WHERE m.trial_id = t.id AND m.name = s.objective_metric AND m.kind IN ('eval', 'final')
         ORDER BY m.attempt DESC, m.seq DESC LIMIT 1) AS value,
       (SELECT CASE s.objective_mode WHEN 'max' THEN max(m.value) ELSE min(m.value) END
          FROM metrics m
         WHERE m.trial_id = t.id AND m.name = s.objective_metric AND m.kind IN ('eval', 'final')) AS best_value
FROM trials t JOIN studies s ON s.id = t.study_id;

-- Per trial: the first eval/final record (in attempt, seq order) at which the objective
-- metric reached the study's target (>= for max, <= for min), and that record's step,
-- samples and wall_s. NULL when never reached or when the study has no target.
CREATE VIEW time_to_target AS
SELECT t.id AS trial_id, t.study_id,
       s.objective_metric AS metric, s.objective_mode AS mode, s.objective_target AS target,
       h.attempt AS attempt, h.seq AS seq, h.value AS value_at_target,
       h.step AS steps_to_target, h.samples AS samples_to_target, h.wall_s AS time_to_target_s
FROM trials t
JOIN studies s ON s.id = t.study_id
LEFT JOIN metrics h
  ON h.trial_id = t.id AND h.name = s.objective_metric
 AND (h.attempt, h.seq) = (SELECT x.attempt, x.seq FROM metrics x
                           WHERE x.trial_id = t.id AND x.name = s.objective_metric
                             AND x.kind IN ('eval', 'final')
                             AND CASE s.objective_mode WHEN 'max' THEN x.value >= s.objective_target
                                                       ELSE x.value <= s.objective_target END
                           ORDER BY x.attempt, x.seq LIMIT 1);

-- Everything a results table needs, one row per trial. samples_per_s is the latest value
-- of that metric (as in metric_latest, looked up directly so each trial costs one seek).
)sql";

// Version 1 -> 2: trials asked for with `dlsweep enqueue` (fixed params, run before the
// sampled ones). `request` makes recording a request idempotent (a request file read twice
// after a crash is one row); `trial_id` is NULL while the request waits and names the
// trial it became once the orchestrator created it (in the trial's own transaction).
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE enqueued_trials (
  id          INTEGER PRIMARY KEY,
  study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
  request     TEXT NOT NULL,
  params_json TEXT NOT NULL,
  who         TEXT NOT NULL DEFAULT 'user',
  created_at  REAL NOT NULL,
  trial_id    INTEGER UNIQUE REFERENCES trials(id) ON DELETE CASCADE,
  UNIQUE (study_id, request)
);
)sql";

// Version 2 -> 3 (and kTrialSummaryView after it): a trial's `value` (the objective's last value) is its current attempt's:
// a rerun that has not reported yet has none, instead of showing the previous attempt's last
// value in `status`. (best_value and time to target still span attempts: a retry continues
// from the checkpoint of the attempt before.)
constexpr const char* kSchemaV3 = R"sql(
DROP VIEW trial_summary;
DROP VIEW trial_objective;
CREATE VIEW trial_objective AS
SELECT t.id AS trial_id, t.study_id,
       s.objective_metric AS metric, s.objective_mode AS mode, s.objective_target AS target,
       (SELECT m.value FROM metrics m
         WHERE m.trial_id = t.id AND m.attempt = t.attempt AND m.name = s.objective_metric
           AND m.kind IN ('eval', 'final')
         ORDER BY m.seq DESC LIMIT 1) AS value,
       (SELECT CASE s.objective_mode WHEN 'max' THEN max(m.value) ELSE min(m.value) END
          FROM metrics m
         WHERE m.trial_id = t.id AND m.name = s.objective_metric AND m.kind IN ('eval', 'final')) AS best_value
FROM trials t JOIN studies s ON s.id = t.study_id;
)sql";

// Version 3 -> 4: `search.warm_start` — the COMPLETE trials of earlier studies copied in at
// submit (study/warm_start.hpp), never run: the sampler's history, read again on resume
// without the earlier database. `number` is the trial's number in this study's history
// (negative: before trial 0, so never a number of this study's own trials).
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE warm_start_trials (
  id               INTEGER PRIMARY KEY,
  study_id         INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
  number           INTEGER NOT NULL,
  source_db        TEXT NOT NULL,
  source_study     TEXT NOT NULL,
  source_number    INTEGER NOT NULL,
  params_json      TEXT NOT NULL,
  value            REAL NOT NULL,
  values_json      TEXT NOT NULL DEFAULT '[]',
  constraints_json TEXT NOT NULL DEFAULT '[]',
  created_at       REAL NOT NULL,
  UNIQUE (study_id, number)
);
)sql";

// Version 4 -> 5: where a study lives — the database it was submitted to and the directory
// holding that database, its study file and its runs (orchestrator/relocation.hpp): what
// `resume` compares with where it finds them, to follow a moved project and to refuse a
// copy's writes into the original's files. '' for studies recorded before.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE studies ADD COLUMN home_db TEXT NOT NULL DEFAULT '';
ALTER TABLE studies ADD COLUMN home_root TEXT NOT NULL DEFAULT '';
)sql";

// kMigrations[v] takes a database from version v to v + 1.
const std::string kMigrations[] = {std::string(kSchemaV1) + kTrialSummaryView, kSchemaV2,
                                   std::string(kSchemaV3) + kTrialSummaryView, kSchemaV4, kSchemaV5};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

Result<std::int64_t> pragma_int(sqlite3* db, const char* sql) {
  auto st = Statement::prepare(db, sql);
  if (!st) return std::unexpected(st.error());
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  return *row ? st->int64(0) : 0;
}

}  // namespace

Result<SchemaProbe> probe_schema(sqlite3* db) {
  SchemaProbe p;
  // The first read of the file is where SQLite notices it is not a database at all.
  auto uv = pragma_int(db, "PRAGMA user_version");
  if (!uv) {
    std::string file = db_file_name(db);
    const int code = sqlite3_errcode(db);
    if (code == SQLITE_NOTADB)
      return fail("is not an SQLite database (" + uv.error().what + ")", file,
                  "point --db at a dlsweep database or at a new file name; dlsweep will not "
                  "overwrite a file it did not create");
    if (code == SQLITE_CANTOPEN && sqlite3_db_readonly(db, "main") == 1)
      return fail("cannot read the database (" + uv.error().what + ")", file,
                  "a reader of a WAL database needs its -shm file: make the directory writable, "
                  "or copy the database with `sqlite3 DB \".backup COPY\"` and query the copy");
    return std::unexpected(uv.error());
  }
  p.user_version = static_cast<int>(*uv);
  auto app = pragma_int(db, "PRAGMA application_id");
  if (!app) return std::unexpected(app.error());
  p.application_id = static_cast<std::int32_t>(*app);
  auto objects = pragma_int(db, "SELECT count(*) FROM sqlite_master");
  if (!objects) return std::unexpected(objects.error());
  p.has_objects = *objects > 0;
  return p;
}

Status check_schema(const SchemaProbe& p, bool writable, const std::string& file) {
  const bool empty = p.user_version == 0 && p.application_id == 0 && !p.has_objects;
  if (empty) {
    if (writable) return {};
    return fail("is an empty file, not a dlsweep database", file,
                "pass `--db PATH` with the database your study wrote, or run `dlsweep submit STUDY` first");
  }
  if (p.application_id != kApplicationId)
    return fail("is an SQLite database of another application, not a dlsweep database", file,
                "point --db at a dlsweep database or at a new file name; dlsweep will not "
                "modify a database it did not create");
  if (p.user_version > kSchemaVersion)
    return fail("was created by a newer dlsweep (schema version " + std::to_string(p.user_version) +
                    ", this dlsweep knows up to " + std::to_string(kSchemaVersion) + ")",
                file, "upgrade dlsweep, or use another --db");
  if (p.user_version < kSchemaVersion && !writable)
    return fail("was created by an older dlsweep (schema version " + std::to_string(p.user_version) +
                    ") and has not been upgraded yet",
                file, "run `dlsweep resume STUDY` once with this dlsweep to upgrade it");
  return {};
}

Status migrate(sqlite3* db) {
  auto tx = Transaction::begin(db);
  if (!tx) return std::unexpected(tx.error());
  // Re-read inside the write lock: the version seen before BEGIN may be stale.
  auto v = pragma_int(db, "PRAGMA user_version");
  if (!v) return std::unexpected(v.error());
  if (*v == kSchemaVersion) return {};  // nothing to do; the destructor ends the transaction
  if (*v > kSchemaVersion || *v < 0)
    return fail("was created by a newer dlsweep (schema version " + std::to_string(*v) + ")",
                db_file_name(db), "upgrade dlsweep, or use another --db");
  for (auto from = *v; from < kSchemaVersion; ++from) {
    if (auto s = exec(db, kMigrations[from],
                      "migrating the schema from version " + std::to_string(from) + " to " + std::to_string(from + 1));
        !s)
      return s;
  }
  // PRAGMAs take no bound parameters; both values are integers we control.
  std::string bump = "PRAGMA application_id = " + std::to_string(kApplicationId) +
                     "; PRAGMA user_version = " + std::to_string(kSchemaVersion);
  if (auto s = exec(db, bump, "recording the schema version"); !s) return s;
  return tx->commit();
}

}  // namespace dlsweep::db
