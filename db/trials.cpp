// trials.cpp — trial rows, their params, and the compare-and-swap state transition.
//
// Invariants:
//  - A trial is born WAITING with its params and a 'created' event, all in one transaction
//    (write-ahead: params are in the database before anything is launched).
//  - A trial's state changes only through transition(): UPDATE ... WHERE state = from, and
//    the event row, in one transaction. Zero rows changed means someone else moved the
//    trial first; the caller gets an Error naming the expected and the actual state.
//  - Finished states (COMPLETE, PRUNED, CANCELLED) are final, whatever the caller asks.
//  - params.value_num holds the value of numeric params (NULL otherwise), so plain SQL can
//    filter and plot by a hyperparameter without parsing JSON.
#include <map>

#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {
namespace {

constexpr const char* kTrialColumns =
    "SELECT id, study_id, number, state, attempt, trial_dir, exit_code, message FROM trials ";

Result<TrialRow> read_trial(const Statement& st, const std::string& file) {
  TrialRow r;
  r.id = st.int64(0);
  r.study_id = st.int64(1);
  r.number = st.int64(2);
  std::string state = st.text(3);
  auto parsed = parse_trial_state(state);
  if (!parsed)
    return fail("trial id " + std::to_string(r.id) + " has unknown state '" + state + "'", file,
                "the database was edited by hand; restore a valid state name");
  r.state = *parsed;
  r.attempt = static_cast<int>(st.int64(4));
  r.trial_dir = st.text(5);
  if (auto e = st.opt_int64(6)) r.exit_code = static_cast<int>(*e);
  r.message = st.text(7);
  r.params = nlohmann::json::object();
  return r;
}

// Fills `params` of each trial from the params table; `sql` selects (trial_id, name, value_json).
Status load_params(sqlite3* db, const std::string& sql, std::int64_t key, std::map<std::int64_t, TrialRow*>& by_id) {
  auto st = Statement::prepare(db, sql);
  if (!st) return std::unexpected(st.error());
  st->bind(1, key);
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto it = by_id.find(st->int64(0));
    if (it == by_id.end()) continue;
    auto v = nlohmann::json::parse(st->text(2), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded())
      return fail("param '" + st->text(1) + "' of trial id " + std::to_string(it->first) + " is not valid JSON",
                  db_file_name(db), "the database was edited by hand; restore the value");
    it->second->params[st->text(1)] = std::move(v);
  }
  return {};
}

}  // namespace

Result<std::int64_t> Storage::create_trial(std::int64_t study_id, std::int64_t number,
                                           const nlohmann::json& params, const std::string& trial_dir) {
  const std::string where =
      file_.string() + ": study id " + std::to_string(study_id) + ", trial " + std::to_string(number);
  if (!params.is_object()) return fail("trial params must be a JSON object, got " + std::string(params.type_name()), where);
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());

  auto study = Statement::prepare(db_, "SELECT 1 FROM studies WHERE id = ?1");
  if (!study) return std::unexpected(study.error());
  study->bind(1, study_id);
  auto found = study->step();
  if (!found) return std::unexpected(found.error());
  if (!*found) return fail("no such study", where, "create the study first");

  auto dup = Statement::prepare(db_, "SELECT id FROM trials WHERE study_id = ?1 AND number = ?2");
  if (!dup) return std::unexpected(dup.error());
  dup->bind(1, study_id).bind(2, number);
  auto exists = dup->step();
  if (!exists) return std::unexpected(exists.error());
  if (*exists)
    return fail("trial number " + std::to_string(number) + " already exists (trial id " +
                    std::to_string(dup->int64(0)) + ")",
                where, "trial numbers are unique within a study; take the next free number");

  const double now = now_unix_seconds();
  auto ins = Statement::prepare(db_,
      "INSERT INTO trials(study_id, number, state, attempt, trial_dir, created_at, updated_at) "
      "VALUES(?1, ?2, ?3, 0, ?4, ?5, ?5)");
  if (!ins) return std::unexpected(ins.error());
  ins->bind(1, study_id).bind(2, number).bind(3, to_string(TrialState::waiting)).bind(4, trial_dir).bind(5, now);
  if (auto s = ins->run(); !s) return fail_in(s.error(), where);
  const std::int64_t id = sqlite3_last_insert_rowid(db_);

  auto par = Statement::prepare(db_, "INSERT INTO params(trial_id, name, value_json, value_num) VALUES(?1, ?2, ?3, ?4)");
  if (!par) return std::unexpected(par.error());
  for (const auto& [name, value] : params.items()) {
    par->bind(1, id).bind(2, name).bind(3, value.dump());
    if (value.is_number()) par->bind(4, value.get<double>());
    else par->bind_null(4);
    if (auto s = par->run(); !s) return fail_in(s.error(), where + ": param '" + name + "'");
    par->reset();
  }

  auto ev = Statement::prepare(db_,
      "INSERT INTO events(study_id, trial_id, at, who, kind, from_state, to_state, attempt, reason) "
      "VALUES(?1, ?2, ?3, 'orchestrator', 'created', NULL, ?4, 0, ?5)");
  if (!ev) return std::unexpected(ev.error());
  ev->bind(1, study_id).bind(2, id).bind(3, now).bind(4, to_string(TrialState::waiting)).bind(5, "params stored");
  if (auto s = ev->run(); !s) return fail_in(s.error(), where);
  if (auto c = tx->commit(); !c) return std::unexpected(c.error());
  // Snapshot mode: a new trial is published before its job can exist (write-ahead).
  publish_pending_ = true;
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return id;
}

Status Storage::add_trial_param(std::int64_t trial_id, const std::string& name, const nlohmann::json& value) {
  const std::string where = file_.string() + ": trial id " + std::to_string(trial_id) + ", param '" + name + "'";
  auto par = Statement::prepare(db_,
      "INSERT INTO params(trial_id, name, value_json, value_num) VALUES(?1, ?2, ?3, ?4) "
      "ON CONFLICT(trial_id, name) DO NOTHING");
  if (!par) return std::unexpected(par.error());
  par->bind(1, trial_id).bind(2, name).bind(3, value.dump());
  if (value.is_number()) par->bind(4, value.get<double>());
  else par->bind_null(4);
  if (auto s = par->run(); !s) return fail_in(s.error(), where);
  publish_pending_ = true;
  return publish_if_pending();
}

Result<TrialRow> Storage::get_trial(std::int64_t trial_id) const {
  auto st = Statement::prepare(db_, std::string(kTrialColumns) + "WHERE id = ?1");
  if (!st) return std::unexpected(st.error());
  st->bind(1, trial_id);
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  if (!*row)
    return fail("no trial with id " + std::to_string(trial_id), file_.string(),
                "list the study's trials with `dlsweep status`");
  auto t = read_trial(*st, file_.string());
  if (!t) return std::unexpected(t.error());
  std::map<std::int64_t, TrialRow*> by_id{{t->id, &*t}};
  if (auto s = load_params(db_, "SELECT trial_id, name, value_json FROM params WHERE trial_id = ?1", trial_id, by_id); !s)
    return std::unexpected(s.error());
  return t;
}

Result<std::vector<TrialRow>> Storage::list_trials(std::int64_t study_id) const {
  auto st = Statement::prepare(db_, std::string(kTrialColumns) + "WHERE study_id = ?1 ORDER BY number");
  if (!st) return std::unexpected(st.error());
  st->bind(1, study_id);
  std::vector<TrialRow> out;
  for (;;) {
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto t = read_trial(*st, file_.string());
    if (!t) return std::unexpected(t.error());
    out.push_back(std::move(*t));
  }
  std::map<std::int64_t, TrialRow*> by_id;
  for (auto& t : out) by_id[t.id] = &t;
  if (auto s = load_params(db_,
                           "SELECT p.trial_id, p.name, p.value_json FROM params p "
                           "JOIN trials t ON t.id = p.trial_id WHERE t.study_id = ?1",
                           study_id, by_id);
      !s)
    return std::unexpected(s.error());
  return out;
}

Status Storage::transition(const TransitionRequest& t) {
  const std::string where = file_.string() + ": trial id " + std::to_string(t.trial_id);
  const std::string arrow = std::string(to_string(t.from)) + " -> " + std::string(to_string(t.to));
  // Finished trials never change — except that the user may run a CANCELLED one again
  // (`dlsweep resume --rerun cancelled`: CANCELLED -> WAITING, a new attempt).
  const bool rerun = t.from == TrialState::cancelled && t.to == TrialState::waiting;
  if (is_final(t.from) && !rerun)
    return fail("refusing transition " + arrow + ": " + std::string(to_string(t.from)) + " is a finished state",
                where, "finished trials never change; this is a bug in the caller");
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  const double now = now_unix_seconds();
  auto upd = Statement::prepare(db_,
      "UPDATE trials SET state = ?1, attempt = ?2, exit_code = COALESCE(?3, exit_code), message = ?4, "
      "updated_at = ?5 WHERE id = ?6 AND state = ?7");
  if (!upd) return std::unexpected(upd.error());
  upd->bind(1, to_string(t.to)).bind(2, t.attempt).bind(3, t.exit_code).bind(4, t.reason).bind(5, now);
  upd->bind(6, t.trial_id).bind(7, to_string(t.from));
  if (auto s = upd->run(); !s) return fail_in(s.error(), where);
  if (upd->changes() == 0) {
    auto cur = Statement::prepare(db_, "SELECT state FROM trials WHERE id = ?1");
    if (!cur) return std::unexpected(cur.error());
    cur->bind(1, t.trial_id);
    auto row = cur->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return fail("no trial with id " + std::to_string(t.trial_id), where);
    return fail("transition " + arrow + " refused: trial " + std::to_string(t.trial_id) + " is " + cur->text(0) +
                    ", expected " + std::string(to_string(t.from)),
                where, "another actor moved the trial first; re-read it and decide again");
  }
  auto ev = Statement::prepare(db_,
      "INSERT INTO events(study_id, trial_id, at, who, kind, from_state, to_state, attempt, reason) "
      "SELECT study_id, id, ?1, ?2, 'transition', ?3, ?4, ?5, ?6 FROM trials WHERE id = ?7");
  if (!ev) return std::unexpected(ev.error());
  ev->bind(1, now).bind(2, t.who).bind(3, to_string(t.from)).bind(4, to_string(t.to)).bind(5, t.attempt);
  ev->bind(6, t.reason).bind(7, t.trial_id);
  if (auto s = ev->run(); !s) return fail_in(s.error(), where);
  if (auto c = tx->commit(); !c) return c;
  // Snapshot mode: a launch (QUEUED: a process or job may exist from now on) and a new
  // attempt before its launch reach the shared file at this batch's commit, not up to
  // kPublishIntervalS later, so that `resume` or `delete` after this node died sees the
  // trial as live. (RUNNING, which follows, changes nothing for them: throttled.)
  if (t.to == TrialState::queued || t.to == TrialState::waiting) {
    publish_pending_ = true;
    return publish_if_pending();
  }
  return {};
}

}  // namespace dlsweep::db
