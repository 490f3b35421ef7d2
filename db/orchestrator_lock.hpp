// orchestrator_lock.hpp — the locks that make each study of a database driven by one
// orchestrator (submit, resume; and cancel, delete, enqueue when they write):
//
//  - DB.lock, the database's writer lock: every process that writes the database holds a
//    POSIX record lock on it for as long as it may write. In direct (WAL) mode it is a
//    shared lock: several orchestrators, one per study, write one database at once. In
//    snapshot mode (a shared filesystem, placement.hpp) it is exclusive: the live copy on
//    one node is the only writer, so one orchestrator drives such a database at a time.
//    A reader tests it (F_GETLK with F_WRLCK, which any holder conflicts with) to know
//    whether anyone writes: it opens the file immutable only when nobody does.
//  - DB.locks/STUDY.lock, the study's lock: exclusive, one orchestrator per study; its
//    holder writes "host pid" into it, which a second one reads to name it.
//
// Both are POSIX record locks (fcntl F_SETLK): this process's alone, not inherited by
// children, released when the process exits (kill -9 included). What a failed lock says is
// db_lock.hpp's (pure); taking and testing them is here.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "db/db_lock.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

/// Takes DB.lock exclusively (no other writer of any study) and writes "host pid" into it;
/// fails if another process holds it (the error names its host and pid) or the
/// filesystem's locks do not work (the error names the filesystem and the fix:
/// db_lock.hpp). Returns the lock file's descriptor, which must stay open (closing it
/// drops the lock).
Result<int> lock_database(const std::string& db);

/// DB.locks/STUDY.lock: where study STUDY of database DB is locked.
std::string study_lock_path(const std::string& db, const std::string& study);

/// The locks a writer of one study holds: DB.lock (shared in direct mode, exclusive in
/// snapshot mode) and the study's own lock (exclusive).
struct StudyLock {
  std::string db;
  std::string study;
  bool exclusive_db = false;  ///< snapshot mode: DB.lock is held exclusively
};

/// Takes the locks of one study of `db` (DB.lock first, then DB.locks/STUDY.lock), held
/// until release_study_lock or the process's exit. Fails, holding nothing, when another
/// process drives this study (the error names the study, the holder's pid and host), when
/// another orchestrator holds the database exclusively (snapshot mode), or when the
/// filesystem's locks do not work. A process may hold the locks of several studies.
Result<StudyLock> lock_study(const std::string& db, const std::string& study);

/// Drops the study's lock (and DB.lock, when this process holds no other study's lock).
void release_study_lock(const StudyLock& lock);

enum class LockState { free, held, unknown };

/// Whether another process holds study STUDY's lock, as this host sees it; `holder` (when
/// given) gets what its holder wrote. unknown: this filesystem's locks cannot be tested.
LockState study_lock_state(const std::string& db, const std::string& study, std::optional<LockHolder>* holder = nullptr);

/// Whether another process holds DB.lock at all (any writer of any study): `exclusive_only`
/// asks only for an exclusive holder (a snapshot-mode orchestrator, or a dlsweep from before
/// the lock per study). Tested through a read-only descriptor: takes no lock.
LockState database_lock_state(const std::string& db, bool exclusive_only = false);

/// lock_study, then the database opened read-write: what an orchestrator (submit, resume)
/// starts with. The locks stay held until the process exits.
Result<std::unique_ptr<Storage>> open_as_orchestrator(const std::string& db, const std::string& study);

}  // namespace dlsweep::db
