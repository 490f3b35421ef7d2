// storage.hpp — the typed API over dlsweep's SQLite database (the only code that runs SQL
// against it, apart from the read-only `dlsweep query` passthrough).
//
// Contract:
//  - open_readwrite() creates the file if needed, turns on WAL, and migrates the schema to
//    kSchemaVersion by PRAGMA user_version; it fails (never half-migrates) on a file that is
//    not a dlsweep database or comes from a newer dlsweep.
//  - open_readonly() never writes: SQLITE_OPEN_READONLY, and query() refuses statements
//    for which sqlite3_stmt_readonly() is false (with a clear error), whatever the mode.
//  - Every mutating call is one transaction. A trial's state changes only through
//    transition(), which checks the expected current state (compare-and-swap) and appends
//    one row to `events` in the same transaction.
//  - ingest() is idempotent: records are keyed by (trial, attempt, seq) and metrics by
//    (trial, attempt, seq, name); re-ingesting the same records changes nothing.
//  - Only one process (the orchestrator) opens the file read-write.
//  - Where the file is decides how it is opened (placement.hpp): on a local disk the file
//    at the path is the database (WAL); on a filesystem other hosts share (NFS, Lustre,
//    FUSE, ...; or DLSWEEP_DB_MODE=snapshot) open_readwrite() works on a live copy on this
//    node's disk and publishes the path from it (snapshot.hpp): before the call returns
//    for a new trial (before its job can exist: within a batch, at commit_batch), a
//    transition into WAITING or QUEUED (a launch), a new study, a changed spec, an
//    enqueue and a deletion; at most every kPublishIntervalS after any other write
//    (metrics, trial ends, jobs); and when the handle is destroyed. open_readonly() opens
//    the published file as immutable (no locks), and query() moves on to a newer snapshot
//    when one was published. The caller of open_readwrite() holds the database lock.
//  - Write batches: between begin_batch() and commit_batch() the mutating calls join one
//    transaction (each still all-or-nothing inside it, as a savepoint), so a burst of
//    writes costs one commit. Until commit_batch() nothing of the batch is visible to
//    readers or survives a crash: the caller commits before anything outside the process
//    may depend on it (the orchestrator: before each submit).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/protocol.hpp"
#include "common/result.hpp"
#include "common/trial_state.hpp"

struct sqlite3;

namespace dlsweep::db {

class SnapshotPublisher;

inline constexpr int kSchemaVersion = 5;

/// The metric name the trial_summary view reads throughput from (samples per second, as
/// reported by the trial program in its eval/final records).
inline constexpr const char* kThroughputMetric = "samples_per_s";

struct StudyRow {
  std::int64_t id = 0;
  std::string name;
  std::string spec_json;        ///< the validated study, normalised to JSON
  std::string source_path;      ///< the study file it came from
  std::string root_dir;         ///< directory holding the trial dirs
  std::string objective_metric;
  std::string objective_mode;   ///< "min" | "max"
  std::optional<double> objective_target;
  std::string state;            ///< "RUNNING" | "FINISHED" | "STOPPED"
  double created_at = 0;        ///< unix seconds
  /// Where the study lives (orchestrator/relocation.hpp): the database file it was submitted
  /// to (or last relocated into), absolute, and the deepest directory holding that database,
  /// the study file and the runs directory. "" for a study recorded before schema version 5.
  std::string home_db;
  std::string home_root;
};

struct NewStudy {
  std::string name, spec_json, source_path, root_dir, objective_metric, objective_mode;
  std::optional<double> objective_target;
  std::string home_db, home_root;  ///< see StudyRow
};

/// A study's stored paths after a move (Storage::relocate_study): every one of them, and
/// each trial's directory by trial id.
struct StudyPaths {
  std::string spec_json, source_path, root_dir, home_db, home_root;
  std::vector<std::pair<std::int64_t, std::string>> trial_dirs;  ///< (trial id, trial_dir)
};

struct TrialRow {
  std::int64_t id = 0;
  std::int64_t study_id = 0;
  std::int64_t number = 0;      ///< 0-based within the study, the sampler's index
  TrialState state = TrialState::waiting;
  int attempt = 0;              ///< 0 for the first launch; +1 per retry
  std::string trial_dir;
  nlohmann::json params;        ///< object: name -> value
  std::optional<int> exit_code;
  std::string message;          ///< last reason (failure text, prune reason, ...)
};

/// One event appended by transition() (or by note_event for study-level events).
struct EventRow {
  std::int64_t id = 0;
  std::optional<std::int64_t> trial_id;
  std::int64_t study_id = 0;
  double at = 0;
  std::string who;              ///< "orchestrator", "backend:local", "user"
  std::string kind;             ///< "transition", "study", ...
  std::string from_state, to_state;
  int attempt = 0;
  std::string reason;
};

struct TransitionRequest {
  std::int64_t trial_id = 0;
  TrialState from = TrialState::waiting;  ///< expected current state (checked)
  TrialState to = TrialState::waiting;
  int attempt = 0;              ///< the attempt after the transition
  std::string who;
  std::string reason;
  std::optional<int> exit_code;
};

struct JobRow {
  std::int64_t trial_id = 0;
  int attempt = 0;
  std::string backend;          ///< "local", "slurm", "fake"
  std::string job_id;
  std::string state;            ///< backend's own state word
};

/// A trial asked for with `dlsweep enqueue` (the `enqueued_trials` table): these params are
/// fixed, the rest are sampled when the orchestrator creates the trial.
struct EnqueuedRow {
  std::int64_t id = 0;          ///< orders the requests: first enqueued, first run
  std::int64_t study_id = 0;
  std::string request;          ///< unique per study: recording the same request twice is a no-op
  nlohmann::json params;        ///< object: name -> the fixed value
  std::string who;              ///< "user"
  double created_at = 0;
  std::optional<std::int64_t> trial_id;  ///< the trial it became; empty while it waits
};

/// A COMPLETE trial of an earlier study copied in by `search.warm_start` (the
/// `warm_start_trials` table; warm_start.cpp): evidence for the sampler, never run.
struct WarmStartRow {
  std::int64_t number = 0;        ///< in this study's history: negative, before trial 0
  std::string source_db;          ///< the earlier study's database (absolute path)
  std::string source_study;
  std::int64_t source_number = 0; ///< its number there
  nlohmann::json params;          ///< placed into this study's space
  double value = 0;               ///< the first objective
  std::vector<double> values;     ///< several objectives
  std::vector<double> constraints;
};

/// Per-trial summary, from the `trial_summary` view.
struct TrialSummary {
  std::int64_t trial_id = 0;
  std::int64_t number = 0;
  std::string state;
  int attempt = 0;
  nlohmann::json params;
  std::optional<double> value;            ///< last reported objective value
  std::optional<double> best_value;       ///< best over the trial's eval/final records
  std::optional<std::int64_t> steps_to_target;
  std::optional<double> time_to_target_s;
  std::optional<std::int64_t> samples_to_target;
  std::optional<double> samples_per_s;    ///< last reported
  std::optional<double> wall_s;           ///< last reported
  std::string message;
};

/// When a trial first ran and when it reached the final state it is in (from `events`).
struct TrialTimes {
  std::optional<double> started_at;  ///< first transition to RUNNING (unix s); none if it never ran
  std::optional<double> ended_at;    ///< last transition into its current final state; none while unfinished
};

/// One metric of one record (the `metrics` table), with the trial's number: a point of a curve.
struct CurvePoint {
  std::int64_t number = 0;  ///< trials.number
  int attempt = 0;
  std::int64_t seq = 0;
  std::string kind;
  std::int64_t step = 0;
  double epoch = 0;
  std::int64_t samples = 0;
  double wall_s = 0;
  std::string name;
  std::optional<double> value;  ///< NULL: reported as null (NaN)
};

/// One metric value of one eval/final record (metric_series).
struct SeriesPoint {
  std::int64_t trial_id = 0;
  std::int64_t seq = 0;
  std::int64_t step = 0;
  std::int64_t samples = 0;
  double wall_s = 0;
  std::string name;
  std::optional<double> value;  ///< NULL in the database (a non-finite number) stays empty
};

/// The rows one study owns, by table: "studies" (1), "trials", then every table that
/// refers to the study by study_id or to its trials by trial_id (params, records, metrics,
/// jobs, events, enqueued_trials, and any a later schema adds). What `dlsweep delete` counts
/// and removes (study_delete.cpp).
struct StudyRows {
  std::vector<std::pair<std::string, std::int64_t>> by_table;  ///< in a stable, readable order
  std::int64_t of(const std::string& table) const {
    for (const auto& [t, n] : by_table)
      if (t == table) return n;
    return 0;
  }
  std::int64_t total() const {
    std::int64_t n = 0;
    for (const auto& [t, c] : by_table) n += c;
    return n;
  }
};

/// Result of an arbitrary read-only query: column names and rows of JSON scalars.
struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;
};

class Storage {
 public:
  static Result<std::unique_ptr<Storage>> open_readwrite(const std::filesystem::path& file);
  static Result<std::unique_ptr<Storage>> open_readonly(const std::filesystem::path& file);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  int schema_version() const;

  // --- write batches (see the contract above)
  /// Opens a batch; an error if one is open already.
  Status begin_batch();
  /// Commits the open batch (no-op when none is). On failure the batch is rolled back.
  Status commit_batch();
  bool in_batch() const { return in_batch_; }
  bool read_only() const { return read_only_; }

  // --- placement (placement.hpp; storage_open.cpp)
  /// True when this handle is in snapshot mode (a writer's live copy, or a reader of a
  /// published snapshot).
  bool snapshot_mode() const { return publisher_ != nullptr || follow_; }
  /// The writer's live copy in snapshot mode ("" otherwise).
  const std::filesystem::path& live_path() const { return live_; }
  /// Snapshot mode, writer: publishes the committed database now if it changed since the
  /// last publish. No-op otherwise.
  Status publish();
  /// Snapshot mode, reader: when the file at the path was replaced by a newer snapshot,
  /// re-opens on it and returns true (query() does this first, so `PRAGMA data_version`
  /// through query() moves when a new snapshot arrives). No-op (false) otherwise.
  bool refresh() const;

  // --- studies
  /// Fails with a clear error if a study of that name exists.
  Result<std::int64_t> create_study(const NewStudy& s);
  Result<std::optional<StudyRow>> find_study(const std::string& name) const;
  Result<std::vector<StudyRow>> list_studies() const;
  Status set_study_state(std::int64_t study_id, const std::string& state, const std::string& reason);
  /// Counts the rows the study owns in every table (see StudyRows); error if there is no
  /// such study.
  Result<StudyRows> count_study_rows(std::int64_t study_id) const;
  /// Deletes the study and every row it owns, in ONE transaction (all or nothing), and
  /// returns what was deleted, counted inside that transaction (study_delete.cpp).
  Result<StudyRows> delete_study(std::int64_t study_id);

  /// Replaces the study's spec_json (compare-and-swap: an error unless it still is
  /// `expected`) and appends `why` (a study-level event: kind, who, reason) in one
  /// transaction. What `resume --add-trials` uses to grow search.trials (enqueued.cpp).
  Status update_study_spec(std::int64_t study_id, const std::string& expected, const std::string& spec_json,
                           const EventRow& why);

  // --- where a study lives (study_home.cpp)
  /// Rewrites every stored path of the study (its row's paths and spec, each listed trial's
  /// directory) and appends `why`, in one transaction: `resume` after a move, or with
  /// --relocate. A trial id not of this study is an error (nothing changes).
  Status relocate_study(std::int64_t study_id, const StudyPaths& paths, const EventRow& why);
  /// Records where a study lives without moving anything (a study recorded before schema
  /// version 5, or a database moved on its own).
  Status set_study_home(std::int64_t study_id, const std::string& home_db, const std::string& home_root);

  // --- enqueued trials (enqueued.cpp)
  /// Records a request for a trial with these fixed params, and an 'enqueue' event, in one
  /// transaction. A request id the study has already recorded is not recorded again:
  /// nullopt then.
  Result<std::optional<EnqueuedRow>> enqueue_trial(std::int64_t study_id, const std::string& request,
                                                   const nlohmann::json& params, const std::string& who);
  /// The study's requests in the order they were made, waiting and taken.
  Result<std::vector<EnqueuedRow>> list_enqueued(std::int64_t study_id) const;
  /// create_trial() for a waiting request, which is marked as taken by the new trial in the
  /// same transaction (so a crash leaves either both or neither). Error if it was taken.
  Result<std::int64_t> create_enqueued_trial(std::int64_t enqueued_id, std::int64_t study_id, std::int64_t number,
                                             const nlohmann::json& params, const std::string& trial_dir);

  // --- warm start (warm_start.cpp)
  /// Records the study's warm-start trials and one 'warm_start' event (`note`), in one
  /// transaction.
  Status add_warm_start_trials(std::int64_t study_id, const std::vector<WarmStartRow>& rows, const std::string& note);
  /// The study's warm-start trials, by number.
  Result<std::vector<WarmStartRow>> warm_start_trials(std::int64_t study_id) const;

  // --- trials
  /// Inserts a WAITING trial with its params and a 'created' event, in one transaction.
  Result<std::int64_t> create_trial(std::int64_t study_id, std::int64_t number,
                                    const nlohmann::json& params, const std::string& trial_dir);
  /// A parameter the trial's program discovered (define-by-run suggest_*): added to the trial's
  /// params once; a second call for the same name keeps the first value.
  Status add_trial_param(std::int64_t trial_id, const std::string& name, const nlohmann::json& value);
  Result<TrialRow> get_trial(std::int64_t trial_id) const;
  Result<std::vector<TrialRow>> list_trials(std::int64_t study_id) const;
  /// Compare-and-swap on the state; appends an event. Error if the current state != from.
  Status transition(const TransitionRequest& t);
  Result<std::vector<EventRow>> events(std::int64_t study_id) const;
  /// The study's newest event of `kind` (e.g. "site_limit"), if any: one indexed row.
  Result<std::optional<EventRow>> latest_event(std::int64_t study_id, const std::string& kind) const;
  /// Appends one event that is not a trial transition (e.g. kind "resume", "note"): uses
  /// study_id, trial_id (optional), who, kind, from/to_state (may be empty), attempt and
  /// reason; `at` = now when 0. Returns the event id.
  Result<std::int64_t> note_event(const EventRow& e);

  // --- jobs
  /// Inserts the job, or updates state (and updated_at) of the known (backend, job_id).
  Status record_job(const JobRow& j);
  /// Every job recorded for the study's trials, in the order they were first recorded.
  Result<std::vector<JobRow>> list_jobs(std::int64_t study_id) const;

  // --- metrics
  /// Inserts the records (and their metrics, long form) for (trial, attempt); returns how
  /// many records were new. Idempotent.
  Result<std::size_t> ingest(std::int64_t trial_id, int attempt,
                             const std::vector<protocol::Record>& records);

  // --- read side
  Result<std::vector<TrialSummary>> summaries(std::int64_t study_id) const;
  /// (x, value) of `metric` in the eval/final records of the current attempt of each of the
  /// study's trials in `state` ("COMPLETE"), in report order, x = the record's epoch (or step
  /// when `by_step`): what pruners compare with.
  /// One report of a metric on every axis.
  struct MetricPoint {
    std::int64_t step = 0;
    double epoch = 0;
    std::int64_t samples = 0;
    double wall_s = 0;
    double value = 0;
  };
  /// trial id -> the eval/final reports of `metric` of its current attempt, in order, for
  /// every trial of the study (any state).
  Result<std::map<std::int64_t, std::vector<MetricPoint>>> metric_points(std::int64_t study_id,
                                                                        const std::string& metric) const;
  Result<std::map<std::int64_t, std::vector<std::pair<double, double>>>> metric_curves(
      std::int64_t study_id, const std::string& metric, const std::string& state, bool by_step = false) const;
  /// Every value of the metrics in `names` in the eval/final records of the current attempt
  /// of each of the study's trials (any state), ordered by trial id then seq: the curves of
  /// a report. Metrics not in `names` are not read.
  Result<std::vector<SeriesPoint>> metric_series(std::int64_t study_id, const std::vector<std::string>& names) const;
  /// Counts by state for one study.
  Result<std::vector<std::pair<std::string, std::int64_t>>> state_counts(std::int64_t study_id) const;
  /// Runs one read-only statement; refuses anything that would write.
  Result<QueryResult> query(const std::string& sql) const;
  /// Start and end of each of the study's trials, by trial id (export_read.cpp).
  Result<std::map<std::int64_t, TrialTimes>> trial_times(std::int64_t study_id) const;
  /// Every metric point of the study, all attempts, ordered by trial number, attempt, seq,
  /// name; streamed to `visit` (a study can hold millions). Stops at visit's first error.
  Status for_each_curve_point(std::int64_t study_id, const std::function<Status(const CurvePoint&)>& visit) const;

 private:
  Storage(sqlite3* db, bool read_only, std::filesystem::path file);
  static Result<std::unique_ptr<Storage>> open_direct(const std::filesystem::path& file);
  static Result<std::unique_ptr<Storage>> open_snapshot_writer(const std::filesystem::path& file);
  /// Snapshot mode: publishes now when a write that must reach the shared file at once
  /// (publish_pending_: a new trial, a launch, ...) has committed and no transaction is open.
  Status publish_if_pending();
  mutable sqlite3* db_;  ///< mutable: a snapshot reader moves to a newer snapshot (refresh)
  bool read_only_;
  std::filesystem::path file_;
  bool in_batch_ = false;
  // snapshot mode, writer
  std::unique_ptr<SnapshotPublisher> publisher_;
  std::filesystem::path live_;
  bool publish_pending_ = false;
  // snapshot mode, reader
  bool follow_ = false;
  mutable std::uint64_t dev_ = 0, ino_ = 0;
  mutable std::int64_t reopens_ = 0;
};

}  // namespace dlsweep::db
