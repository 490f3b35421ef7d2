// enqueued.cpp — growing and steering a study: trials asked for with `dlsweep enqueue`
// (the `enqueued_trials` table) and the study's spec rewritten by `resume --add-trials`.
//
// Invariants:
//  - A request is recorded with its 'enqueue' event in one transaction, at most once per
//    (study, request id): whoever records a request file (the orchestrator, or the enqueue
//    command when no orchestrator runs) may crash before removing it and read it again.
//  - A request becomes a trial in the trial's own transaction (create_enqueued_trial): the
//    trial row, its params and the request's trial_id commit together or not at all, so a
//    request is never run twice nor lost.
//  - update_study_spec is a compare-and-swap on spec_json with its event row.
#include <fmt/format.h>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {
namespace {

Status insert_study_event(sqlite3* db, std::int64_t study_id, double at, const std::string& who,
                          const std::string& kind, const std::string& reason) {
  auto ev = Statement::prepare(db,
      "INSERT INTO events(study_id, trial_id, at, who, kind, from_state, to_state, attempt, reason) "
      "VALUES(?1, NULL, ?2, ?3, ?4, NULL, NULL, 0, ?5)");
  if (!ev) return std::unexpected(ev.error());
  ev->bind(1, study_id).bind(2, at).bind(3, who).bind(4, kind).bind(5, reason);
  return ev->run();
}

Status study_exists(sqlite3* db, std::int64_t study_id, const std::string& where) {
  auto st = Statement::prepare(db, "SELECT 1 FROM studies WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return fail("no such study", where, "list the studies with `dlsweep status`");
  return {};
}

constexpr const char* kEnqueuedColumns =
    "SELECT id, study_id, request, params_json, who, created_at, trial_id FROM enqueued_trials ";

Result<EnqueuedRow> read_enqueued(const Statement& st, const std::string& file) {
  EnqueuedRow r;
  r.id = st.int64(0);
  r.study_id = st.int64(1);
  r.request = st.text(2);
  r.params = nlohmann::json::parse(st.text(3), nullptr, /*allow_exceptions=*/false);
  if (!r.params.is_object())
    return fail("enqueued request id " + std::to_string(r.id) + " has params that are not a JSON object", file,
                "the database was edited by hand; restore the value");
  r.who = st.text(4);
  r.created_at = st.real(5);
  r.trial_id = st.opt_int64(6);
  return r;
}

}  // namespace

Status Storage::update_study_spec(std::int64_t study_id, const std::string& expected, const std::string& spec_json,
                                  const EventRow& why) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id);
  if (why.kind.empty()) return fail("an event needs a kind", where + ": events");
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  if (auto s = study_exists(db_, study_id, where); !s) return s;
  auto upd = Statement::prepare(db_, "UPDATE studies SET spec_json = ?1 WHERE id = ?2 AND spec_json = ?3");
  if (!upd) return std::unexpected(upd.error());
  upd->bind(1, spec_json).bind(2, study_id).bind(3, expected);
  if (auto s = upd->run(); !s) return fail_in(s.error(), where);
  if (upd->changes() == 0)
    return fail("the study's stored spec changed while it was being updated", where,
                "run the command again (is another dlsweep writing this database?)");
  if (auto s = insert_study_event(db_, study_id, why.at > 0 ? why.at : now_unix_seconds(),
                                  why.who.empty() ? "user" : why.who, why.kind, why.reason);
      !s)
    return fail_in(s.error(), where);
  if (auto c = tx->commit(); !c) return c;
  publish_pending_ = true;  // snapshot mode: on the shared file before this returns
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return {};
}

Result<std::optional<EnqueuedRow>> Storage::enqueue_trial(std::int64_t study_id, const std::string& request,
                                                          const nlohmann::json& params, const std::string& who) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id) + ": enqueue";
  if (!params.is_object())
    return fail("enqueued params must be a JSON object, got " + std::string(params.type_name()), where);
  if (request.empty()) return fail("an enqueue request needs an id", where);
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  if (auto s = study_exists(db_, study_id, where); !s) return std::unexpected(s.error());
  const double now = now_unix_seconds();
  auto ins = Statement::prepare(db_,
      "INSERT INTO enqueued_trials(study_id, request, params_json, who, created_at) VALUES(?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT(study_id, request) DO NOTHING");
  if (!ins) return std::unexpected(ins.error());
  const std::string who_ = who.empty() ? "user" : who;
  ins->bind(1, study_id).bind(2, request).bind(3, params.dump()).bind(4, who_).bind(5, now);
  if (auto s = ins->run(); !s) return fail_in(s.error(), where);
  if (ins->changes() == 0) return std::optional<EnqueuedRow>{};  // recorded before: nothing to do
  EnqueuedRow row{sqlite3_last_insert_rowid(db_), study_id, request, params, who_, now, std::nullopt};
  if (auto s = insert_study_event(db_, study_id, now, who_, "enqueue",
                                  fmt::format("enqueued a trial with {} (request {})", params.dump(), request));
      !s)
    return fail_in(s.error(), where);
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  publish_pending_ = true;  // snapshot mode: on the shared file before this returns
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return std::optional<EnqueuedRow>(std::move(row));
}

Result<std::vector<EnqueuedRow>> Storage::list_enqueued(std::int64_t study_id) const {
  auto st = Statement::prepare(db_, std::string(kEnqueuedColumns) + "WHERE study_id = ?1 ORDER BY id");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<EnqueuedRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto r = read_enqueued(*st, file_.string());
    if (!r) return std::unexpected(r.error());
    out.push_back(std::move(*r));
  }
  return out;
}

Result<std::int64_t> Storage::create_enqueued_trial(std::int64_t enqueued_id, std::int64_t study_id,
                                                    std::int64_t number, const nlohmann::json& params,
                                                    const std::string& trial_dir) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id) + ", trial " +
                            std::to_string(number) + " from enqueued request id " + std::to_string(enqueued_id);
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto id = create_trial(study_id, number, params, trial_dir);  // a savepoint inside tx
  if (!id) return std::unexpected(id.error());
  auto upd = Statement::prepare(db_,
      "UPDATE enqueued_trials SET trial_id = ?1 WHERE id = ?2 AND study_id = ?3 AND trial_id IS NULL");
  if (!upd) return std::unexpected(upd.error());
  upd->bind(1, *id).bind(2, enqueued_id).bind(3, study_id);
  if (auto s = upd->run(); !s) return fail_in(s.error(), where);
  if (upd->changes() == 0)
    return fail("the enqueued request does not exist or already became a trial", where,
                "a request runs once; this is a bug in the caller");
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());  // create_trial asked for it
  return *id;
}

}  // namespace dlsweep::db
