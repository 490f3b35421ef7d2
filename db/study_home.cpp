// study_home.cpp — where a study lives: its stored paths rewritten after a move
// (Storage::relocate_study) and its home recorded (Storage::set_study_home). What the paths
// become is decided in orchestrator/relocation.hpp; this file only writes them.
//
// Invariant: a relocation is one transaction — the study's row, every trial directory it
// lists and the 'relocate' event commit together or not at all, so a crash never leaves a
// study half in its old place and half in its new one.
#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

Status Storage::relocate_study(std::int64_t study_id, const StudyPaths& paths, const EventRow& why) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id) + ": relocate";
  if (why.kind.empty()) return fail("an event needs a kind", where + ": events");
  auto tx = Transaction::begin(db_);
  if (!tx) return std::unexpected(tx.error());
  auto upd = Statement::prepare(db_,
      "UPDATE studies SET spec_json = ?1, source_path = ?2, root_dir = ?3, home_db = ?4, home_root = ?5 "
      "WHERE id = ?6");
  if (!upd) return std::unexpected(upd.error());
  upd->bind(1, paths.spec_json).bind(2, paths.source_path).bind(3, paths.root_dir);
  upd->bind(4, paths.home_db).bind(5, paths.home_root).bind(6, study_id);
  if (auto s = upd->run(); !s) return fail_in(s.error(), where);
  if (upd->changes() == 0) return fail("no such study", where, "list the studies with `dlsweep status`");
  for (const auto& [trial_id, dir] : paths.trial_dirs) {
    auto t = Statement::prepare(db_, "UPDATE trials SET trial_dir = ?1 WHERE id = ?2 AND study_id = ?3");
    if (!t) return std::unexpected(t.error());
    t->bind(1, dir).bind(2, trial_id).bind(3, study_id);
    if (auto s = t->run(); !s) return fail_in(s.error(), where);
    if (t->changes() == 0)
      return fail("trial id " + std::to_string(trial_id) + " is not a trial of this study", where,
                  "a bug in the caller: nothing was changed");
  }
  const EventRow& ev = why;
  auto ins = Statement::prepare(db_,
      "INSERT INTO events(study_id, trial_id, at, who, kind, from_state, to_state, attempt, reason) "
      "VALUES(?1, NULL, ?2, ?3, ?4, NULL, NULL, 0, ?5)");
  if (!ins) return std::unexpected(ins.error());
  ins->bind(1, study_id).bind(2, ev.at > 0 ? ev.at : now_unix_seconds()).bind(3, ev.who.empty() ? "user" : ev.who);
  ins->bind(4, ev.kind).bind(5, ev.reason);
  if (auto s = ins->run(); !s) return fail_in(s.error(), where);
  if (auto c = tx->commit(); !c) return c;
  publish_pending_ = true;  // snapshot mode: on the shared file before this returns
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return {};
}

Status Storage::set_study_home(std::int64_t study_id, const std::string& home_db, const std::string& home_root) {
  const std::string where = file_.string() + ": study id " + std::to_string(study_id);
  auto upd = Statement::prepare(db_, "UPDATE studies SET home_db = ?1, home_root = ?2 WHERE id = ?3");
  if (!upd) return std::unexpected(upd.error());
  upd->bind(1, home_db).bind(2, home_root).bind(3, study_id);
  if (auto s = upd->run(); !s) return fail_in(s.error(), where);
  if (upd->changes() == 0) return fail("no such study", where, "list the studies with `dlsweep status`");
  publish_pending_ = true;
  if (auto p = publish_if_pending(); !p) return std::unexpected(p.error());
  return {};
}

}  // namespace dlsweep::db
