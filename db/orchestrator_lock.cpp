// orchestrator_lock.cpp — see orchestrator_lock.hpp.
#include "db/orchestrator_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "db/fs_kind.hpp"
#include "db/placement.hpp"

namespace dlsweep::db {

namespace {
std::string this_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

// What a lock file says about its holder: the "host pid" it wrote, else (an older dlsweep
// wrote nothing) the kernel's answer for a local holder.
std::optional<LockHolder> read_holder(int fd) {
  char buf[320] = {};
  std::optional<LockHolder> holder;
  if (auto n = ::pread(fd, buf, sizeof buf - 1, 0); n > 0) holder = parse_lock_file(std::string_view(buf, n));
  if (!holder) {
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    if (::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK && probe.l_pid > 0)
      holder = LockHolder{"", static_cast<long>(probe.l_pid)};
  }
  return holder;
}

// Takes a POSIX record lock of `type` (F_RDLCK: shared, F_WRLCK: exclusive) on the whole
// of `path`, created if missing, and writes "host pid" into it. Returns its descriptor, or
// what the failure is (db_lock.hpp's lock_outcome; `study` says whose lock it is).
//
// A POSIX record lock (fcntl F_SETLK) belongs to this process alone: it dies with the
// process, and a child does not share it. (flock's lock belongs to the open file
// description, which a child shares from clone to exec: a resume started just after a
// kill -9 found the lock held by a trial still on its way to exec, seen in CI.) It also
// works over NFS (lockd), where flock is emulated. The fd stays open while the lock is
// held: closing any fd of this file in this process would drop the lock, so nothing else
// here opens it.
Result<int> take_lock(const std::string& db, const std::string& path, short type, std::string_view study) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::string("cannot create lock file: ") + std::strerror(errno), path);
  struct flock whole {};
  whole.l_type = type;
  whole.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_SETLK, &whole);
  const int err = rc == 0 ? 0 : errno;
  const std::string host = this_host_name();
  if (rc != 0) {
    const auto holder = read_holder(fd);
    ::close(fd);
    auto fs_kind = probe_fs(path);
    return std::unexpected(
        lock_outcome(rc, err, db, path, holder, host, fs_kind ? *fs_kind : classify_fs_magic(0), study).error());
  }
  // Shared holders of DB.lock each write themselves: the file names the latest, which is
  // what a refused exclusive taker can say. A torn overwrite by two of them leaves the
  // first line whole (parse_lock_file reads only it).
  std::string text = lock_file_text(host, ::getpid());
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, text.data(), text.size(), 0);
  return fd;
}

// What a test of a lock file's lock finds (F_GETLK through a read-only descriptor, taking
// nothing): `type` F_WRLCK finds any holder, F_RDLCK only an exclusive one. A lock this
// process holds is not seen (POSIX locks never conflict with their own process).
LockState test_lock(const std::string& path, short type, std::optional<LockHolder>* holder) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? LockState::free : LockState::unknown;
  struct flock probe {};
  probe.l_type = type;
  probe.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_GETLK, &probe);
  LockState state = rc != 0 ? LockState::unknown : probe.l_type != F_UNLCK ? LockState::held : LockState::free;
  if (state == LockState::held && holder) {
    char buf[320] = {};
    if (auto n = ::pread(fd, buf, sizeof buf - 1, 0); n > 0) *holder = parse_lock_file(std::string_view(buf, n));
    if (!*holder && probe.l_pid > 0) *holder = LockHolder{"", static_cast<long>(probe.l_pid)};
  }
  // Closing drops this process's own locks on the file: callers test files they hold no lock on.
  ::close(fd);
  return state;
}

// This process's locks. DB.lock is taken once per database and dropped with the last of
// its studies' locks (closing its fd would drop it for every study at once).
struct HeldDb {
  int fd = -1;
  int studies = 0;
  bool exclusive = false;
};
std::mutex held_mutex;
std::map<std::string, HeldDb> held_dbs;       // by DB.lock path
std::map<std::string, int> held_studies;      // by study lock path: its fd

void drop_db(const std::string& lock_path) {
  auto it = held_dbs.find(lock_path);
  if (it == held_dbs.end() || --it->second.studies > 0) return;
  ::close(it->second.fd);  // drops the lock
  held_dbs.erase(it);
}

}  // namespace

Result<int> lock_database(const std::string& db) { return take_lock(db, db + ".lock", F_WRLCK, {}); }

std::string study_lock_path(const std::string& db, const std::string& study) {
  return db + ".locks/" + study + ".lock";
}

Result<StudyLock> lock_study(const std::string& db, const std::string& study) {
  std::lock_guard guard(held_mutex);
  const std::string db_lock = db + ".lock";
  const std::string path = study_lock_path(db, study);
  if (held_studies.contains(path)) return StudyLock{db, study, held_dbs[db_lock].exclusive};
  // 1. DB.lock: shared in direct mode (each study's orchestrator beside the others),
  // exclusive in snapshot mode (one live copy, one writer).
  auto placement = placement_of(db);
  const bool exclusive = placement && placement->mode == DbMode::snapshot;
  auto& mine = held_dbs[db_lock];
  if (mine.fd < 0) {
    auto fd = take_lock(db, db_lock, exclusive ? F_WRLCK : F_RDLCK, {});
    if (!fd) {
      held_dbs.erase(db_lock);
      // The holder drives this very study (snapshot mode: exclusively): say so, naming it.
      std::optional<LockHolder> holder;
      if (test_lock(path, F_WRLCK, &holder) == LockState::held) {
        auto fs_kind = probe_fs(path);
        return std::unexpected(lock_outcome(-1, EAGAIN, db, path, holder, this_host_name(),
                                            fs_kind ? *fs_kind : classify_fs_magic(0), study)
                                   .error());
      }
      Error e = fd.error();
      if (e.what.starts_with("another dlsweep orchestrator"))
        e.fix = exclusive ? "this database is on a filesystem other hosts share (snapshot mode, docs/database.md): one "
                            "orchestrator writes it at a time; wait for it to finish, stop it, or use another --db"
                          : "it drives this database alone (snapshot mode, or a dlsweep from before several studies "
                            "could run at once); wait for it to finish, stop it, or use another --db";
      return std::unexpected(e);
    }
    mine.fd = *fd;
    mine.exclusive = exclusive;
  }
  ++mine.studies;
  // 2. The study's own lock.
  const std::string dir = db + ".locks";
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    const int err = errno;
    drop_db(db_lock);
    return fail(std::string("cannot create the directory of the studies' locks: ") + std::strerror(err), dir,
                "check that the directory of --db is writable");
  }
  auto fd = take_lock(db, path, F_WRLCK, study);
  if (!fd) {
    drop_db(db_lock);
    return std::unexpected(fd.error());
  }
  held_studies[path] = *fd;
  return StudyLock{db, study, exclusive};
}

void release_study_lock(const StudyLock& lock) {
  std::lock_guard guard(held_mutex);
  const std::string path = study_lock_path(lock.db, lock.study);
  auto it = held_studies.find(path);
  if (it == held_studies.end()) return;
  ::close(it->second);
  held_studies.erase(it);
  drop_db(lock.db + ".lock");
}

LockState study_lock_state(const std::string& db, const std::string& study, std::optional<LockHolder>* holder) {
  return test_lock(study_lock_path(db, study), F_WRLCK, holder);
}

LockState database_lock_state(const std::string& db, bool exclusive_only) {
  return test_lock(db + ".lock", exclusive_only ? F_RDLCK : F_WRLCK, nullptr);
}

Result<std::unique_ptr<Storage>> open_as_orchestrator(const std::string& db, const std::string& study) {
  if (auto lock = lock_study(db, study); !lock) return std::unexpected(lock.error());
  return Storage::open_readwrite(db);
}

}  // namespace dlsweep::db
