// orchestrator_lock.hpp — the database lock that keeps one orchestrator (submit, resume)
// the only writer of a database: DB.lock, a POSIX record lock with "host pid" in it. What
// a failed lock says is db_lock.hpp's (pure); taking it is here.
#pragma once

#include <memory>
#include <string>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::db {

/// Takes the lock on DB.lock (a POSIX record lock: this process's alone, not inherited by
/// children, held until the process exits) and writes "host pid" into it; fails if another
/// process holds it (the error names its host and pid) or the filesystem's locks do not
/// work (the error names the filesystem and the fix: db_lock.hpp). Returns the lock
/// file's descriptor, which must stay open (closing it drops the lock).
Result<int> lock_database(const std::string& db);

/// lock_database, then the database opened read-write: what an orchestrator (submit,
/// resume) starts with. The lock stays held until the process exits.
Result<std::unique_ptr<Storage>> open_as_orchestrator(const std::string& db);

}  // namespace dlsweep::db
