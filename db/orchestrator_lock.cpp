// orchestrator_lock.cpp — see orchestrator_lock.hpp.
#include "db/orchestrator_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "db/db_lock.hpp"
#include "db/fs_kind.hpp"

namespace dlsweep::db {

namespace {
std::string this_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}
}  // namespace

// The orchestrator is the database's only writer: a lock on DB.lock, held for the whole
// sweep, makes a second orchestrator on the same file fail fast instead of interleaving its
// writes. It is a POSIX record lock (fcntl F_SETLK), which belongs to this process alone:
// it dies with the process, and a child does not share it. (flock's lock belongs to the open
// file description, which a child shares from clone to exec: a resume started just after a
// kill -9 found the lock held by a trial still on its way to exec, seen in CI.) It also
// works over NFS (lockd), where flock is emulated. The fd stays open for the process's life:
// closing any fd of this file would drop the lock, so nothing else here opens it.
// The holder writes "host pid" into the file, so that a second orchestrator, on any host,
// can say who holds it; why a lock fails (held, or a filesystem without working locks:
// Lustre without -o flock) is db/db_lock's lock_outcome.
Result<int> lock_database(const std::string& db) {
  std::string path = db + ".lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::string("cannot create lock file: ") + std::strerror(errno), path);
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_SETLK, &whole);
  const int err = rc == 0 ? 0 : errno;
  const std::string host = this_host_name();
  if (rc != 0) {
    char buf[320] = {};
    std::optional<LockHolder> holder;
    if (auto n = ::pread(fd, buf, sizeof buf - 1, 0); n > 0) holder = parse_lock_file(std::string_view(buf, n));
    if (!holder) {  // an older dlsweep wrote nothing; the kernel knows a local holder's pid
      struct flock probe {};
      probe.l_type = F_WRLCK;
      probe.l_whence = SEEK_SET;
      if (::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK && probe.l_pid > 0)
        holder = LockHolder{"", static_cast<long>(probe.l_pid)};
    }
    ::close(fd);
    auto fs_kind = probe_fs(path);
    return std::unexpected(
        lock_outcome(rc, err, db, path, holder, host, fs_kind ? *fs_kind : classify_fs_magic(0)).error());
  }
  std::string text = lock_file_text(host, ::getpid());
  if (::ftruncate(fd, 0) == 0) (void)::pwrite(fd, text.data(), text.size(), 0);
  return fd;
}

Result<std::unique_ptr<Storage>> open_as_orchestrator(const std::string& db) {
  if (auto lock = lock_database(db); !lock) return std::unexpected(lock.error());
  return Storage::open_readwrite(db);
}

}  // namespace dlsweep::db
