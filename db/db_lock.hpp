// db_lock.hpp — what a lock of the database (DB.lock, or a study's DB.locks/STUDY.lock,
// taken by db/orchestrator_lock with POSIX record locks) says when it cannot be taken, as
// pure functions of the fcntl result: held by another orchestrator (named by the "host pid"
// its holder wrote into the lock file), or a filesystem without working locks (ENOLCK,
// ENOSYS, EOPNOTSUPP, EINVAL: named with its mount type and the fix), or anything else.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"
#include "db/fs_kind.hpp"

namespace dlsweep::db {

/// Who holds the lock, as its holder wrote it into DB.lock.
struct LockHolder {
  std::string host;  ///< "" when the file predates hosts (it held only the pid)
  long pid = 0;
};

/// DB.lock's content for this holder: "host pid\n".
std::string lock_file_text(std::string_view host, long pid);

/// DB.lock's content read back: "host pid" (or an older file's "pid"); nullopt when it
/// names no pid.
std::optional<LockHolder> parse_lock_file(std::string_view text);

enum class LockFailure {
  held,         ///< EACCES/EAGAIN: another process holds it
  unsupported,  ///< ENOLCK/ENOSYS/EOPNOTSUPP/ENOTSUP/EINVAL: this filesystem's locks do not work
  other,        ///< anything else (EIO, EBADF, ...)
};

LockFailure classify_lock_errno(int err);

/// What taking the lock came to: `rc` and `err` are fcntl(F_SETLK)'s return value and errno.
/// Ok when rc == 0; otherwise the Error says which failure it is. `holder` is what DB.lock
/// says (read by the caller), `this_host` the caller's host name, `fs` the lock file's
/// filesystem. `study`: the lock is that study's (DB.locks/STUDY.lock), and a holder is
/// told as the orchestrator driving that study; "" for the database's own lock (DB.lock).
Status lock_outcome(int rc, int err, const std::string& db, const std::string& lock_path,
                    const std::optional<LockHolder>& holder, std::string_view this_host, const FsKind& fs,
                    std::string_view study = {});

}  // namespace dlsweep::db
