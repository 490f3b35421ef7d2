// storage_open.cpp — opening and closing a dlsweep database: read-write or read-only, and
// where it lives (placement.hpp): directly (a local disk: WAL) or in snapshot mode (a
// filesystem other hosts share: a live copy on this node, published to the path).
//
// Invariants:
//  - A read-write handle has WAL on (on its live copy in snapshot mode), foreign keys on,
//    a 30 s busy timeout, and a schema at kSchemaVersion; a file that is not ours is
//    refused before anything is written to it.
//  - A read-only handle is opened with SQLITE_OPEN_READONLY and PRAGMA query_only, so no
//    code path (not even a bug) can write through it. In snapshot mode it is immutable too:
//    no lock is taken (none can fail), no -wal/-shm is read or created. In direct mode a
//    reader that cannot create the -wal/-shm of a WAL file (read permission only, a
//    read-only mount) opens it immutable when no orchestrator holds DB.lock and the -wal is
//    empty; otherwise it is told what it lacks.
//  - Snapshot mode, writer: the live copy starts from what is published (so `resume` on
//    another node after this one died starts from the shared file); a publish follows the
//    open at once; destruction stops the publisher, publishes the rest and removes the
//    live copy — unless that last publish failed, when the live copy stays and is named.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "db/placement.hpp"
#include "db/schema.hpp"
#include "db/snapshot.hpp"
#include "db/sqlite_handle.hpp"
#include "db/storage.hpp"

#include "common/stop_signal.hpp"

namespace fs = std::filesystem;

namespace dlsweep::db {
namespace {

// Several orchestrators, one per study, may write one database at once (WAL mode): each
// write batch is one turn of an engine's loop (milliseconds), so a writer waiting for
// another's commit waits briefly; the bound is generous so that a loaded machine does not
// turn a wait into a failed sweep.
constexpr int kBusyTimeoutMs = 30000;

// SQLite's busy wait (another connection holds the lock), up to kBusyTimeoutMs, that gives
// up at once when the process is asked to stop (common/stop_signal.hpp): the statement
// fails with SQLITE_BUSY, its transaction rolls back, and the orchestrator exits.
int busy_wait(void*, int tries) {
  constexpr int kStepMs = 10;
  if (stop_signal_seen() != 0 || tries * kStepMs >= kBusyTimeoutMs) return 0;
  sqlite3_sleep(kStepMs);
  return stop_signal_seen() == 0;
}

void set_busy_wait(sqlite3* db) { sqlite3_busy_handler(db, busy_wait, nullptr); }

struct SqliteCloser {
  void operator()(sqlite3* db) const {
    release_statements(db);
    sqlite3_close_v2(db);
  }
};
using DbPtr = std::unique_ptr<sqlite3, SqliteCloser>;

Result<DbPtr> open_file(const fs::path& file, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(file.c_str(), &raw, flags | SQLITE_OPEN_EXRESCODE, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    const bool rw = flags & SQLITE_OPEN_READWRITE;
    return fail("cannot open the database: " + msg, file.string(),
                rw ? "check that the path is a file and that it and its directory are writable"
                   : "check that the path is a readable file");
  }
  set_busy_wait(db.get());
  keep_statements(db.get());
  return db;
}

// A read-only connection to a published snapshot, checked and query-only.
Result<DbPtr> open_published_checked(const fs::path& file) {
  auto raw = open_published(file);
  if (!raw) return std::unexpected(raw.error());
  DbPtr db(*raw);
  set_busy_wait(db.get());
  keep_statements(db.get());
  auto probe = probe_schema(db.get());
  if (!probe) return std::unexpected(probe.error());
  if (auto s = check_schema(*probe, /*writable=*/false, file.string()); !s) return std::unexpected(s.error());
  if (auto s = exec(db.get(), "PRAGMA query_only = ON", "making the handle query-only"); !s)
    return std::unexpected(s.error());
  return db;
}

// One line per database and process: where it is and what dlsweep does about it.
void say_once(const std::string& line, const fs::path& file) {
  static std::set<std::string> said;
  if (line.empty() || !said.insert(file.string()).second) return;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

Status check_live_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail("cannot create the directory for the live database", dir.string(),
                "set DLSWEEP_DB_LIVE_DIR (or TMPDIR) to a writable directory on this node's local disk");
  if (st.st_uid != ::getuid())
    return fail("the directory for the live database belongs to another user", dir.string(),
                "set DLSWEEP_DB_LIVE_DIR (or TMPDIR) to a directory of your own on this node's local disk");
  ::chmod(dir.c_str(), 0700);
  return {};
}

// exists(), asked again for a moment when the answer is no: on a network or FUSE
// filesystem a lookup that races a publish (a rename over the file) can miss it.
bool exists_settled(const fs::path& file) {
  std::error_code ec;
  for (int i = 0; i < 5; ++i) {
    if (fs::exists(file, ec)) return true;
    if (i + 1 < 5) sqlite3_sleep(10);
  }
  return false;
}

// Is any orchestrator writing `file` now? Each holds a POSIX lock on DB.lock while it runs
// (db/orchestrator_lock.cpp): shared when several studies' orchestrators write the file at
// once, exclusive in snapshot mode. F_GETLK for a write lock conflicts with either, and
// tests through a read-only descriptor, so a reader needs no write access to ask. Unknown
// (DB.lock unreadable): assume a writer.
bool writer_active(const fs::path& file) {
  const std::string lock = file.string() + ".lock";
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno != ENOENT;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_GETLK, &fl);
  ::close(fd);
  return rc != 0 || fl.l_type != F_UNLCK;
}

// A WAL-mode database with everything checkpointed into the file itself: no -wal, or an
// empty one (what the last connection of a clean close leaves).
bool wal_empty(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file.string() + "-wal", ec);
  return ec || size == 0;
}

bool same_file(const fs::path& file, std::uint64_t dev, std::uint64_t ino) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return true;  // gone for a moment (mid-rename): keep what we have
  return st.st_dev == dev && st.st_ino == ino;
}

}  // namespace

Result<std::unique_ptr<Storage>> Storage::open_direct(const fs::path& file) {
  auto db = open_file(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return std::unexpected(db.error());
  sqlite3* h = db->get();
  // SQLite silently falls back to read-only when the file is not writable; say so now
  // rather than at the first write.
  if (sqlite3_db_readonly(h, "main") == 1)
    return fail("the database file is not writable", file.string(),
                "fix its permissions, or use `dlsweep query`/`status`, which only read");
  auto probe = probe_schema(h);
  if (!probe) return std::unexpected(probe.error());
  if (auto s = check_schema(*probe, /*writable=*/true, file.string()); !s) return std::unexpected(s.error());
  if (auto s = exec(h, "PRAGMA foreign_keys = ON", "enabling foreign keys"); !s) return std::unexpected(s.error());
  // WAL lets readers (query/status) run while the orchestrator writes. It needs shared
  // memory between the processes, so only processes of this host may open the file: what
  // placement.hpp makes sure of (a shared filesystem gets snapshot mode).
  auto wal = Statement::prepare(h, "PRAGMA journal_mode = WAL");
  if (!wal) return std::unexpected(wal.error());
  auto row = wal->step();
  if (!row) return std::unexpected(row.error());
  if (!*row || wal->text(0) != "wal")
    return fail("cannot switch the database to WAL mode (journal mode stays '" + (*row ? wal->text(0) : "") + "')",
                file.string(),
                "put the database on a local filesystem with `--db PATH`, or set DLSWEEP_DB_MODE=snapshot");
  wal->reset();
  // In WAL mode NORMAL syncs at checkpoints, not at every commit: a commit survives a crash
  // of any process, and only an OS crash or power cut can lose the last few commits (never
  // corrupt the file). Losing them is recoverable by design: ingestion re-reads the files,
  // and resume adopts jobs by the token in their names. FULL costs one fsync per commit
  // (the [perf] test in tests/db ingests about 3x slower with it).
  if (auto s = exec(h, "PRAGMA synchronous = NORMAL", "setting synchronous mode"); !s) return std::unexpected(s.error());
  if (auto s = migrate(h); !s) return std::unexpected(s.error());
  return std::unique_ptr<Storage>(new Storage(db->release(), false, file));
}

Result<std::unique_ptr<Storage>> Storage::open_snapshot_writer(const fs::path& file) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (::access(dir.c_str(), W_OK) != 0)
    return fail("the directory of the database is not writable (the snapshot is published there)", dir.string(),
                "fix its permissions, or use `dlsweep query`/`status`, which only read");
  std::error_code ec;
  const fs::path live = live_path_for(fs::absolute(file, ec), live_base_dir(), ::getuid());
  if (auto s = check_live_dir(live.parent_path()); !s) return std::unexpected(s.error());
  // The caller holds the database lock: no other publisher runs, any temp file is a leftover.
  remove_stale_publish_temps(file);
  const bool had_wal = fs::exists(file, ec) && is_wal_file(file);
  if (auto s = restore_live_copy(file, live); !s) return std::unexpected(s.error());
  auto opened = open_direct(live);
  if (!opened) {
    remove_live_copy(live);
    return fail_in(opened.error(), "the live copy of " + file.string());
  }
  auto& storage = *opened;
  storage->file_ = file;
  storage->live_ = live;
  auto publisher = SnapshotPublisher::start(live, file, kPublishIntervalS);
  if (!publisher) return std::unexpected(publisher.error());
  if (auto s = (*publisher)->publish_now(/*force=*/true); !s) return std::unexpected(s.error());
  storage->publisher_ = std::move(*publisher);
  // A file written in direct mode (WAL) is now a snapshot in DELETE mode: its old -wal and
  // -shm (read into the live copy above) are nobody's any more.
  if (had_wal) {
    fs::remove(file.string() + "-wal", ec);
    fs::remove(file.string() + "-shm", ec);
  }
  return std::move(storage);
}

Result<std::unique_ptr<Storage>> Storage::open_readwrite(const fs::path& file) {
  if (file.empty()) return fail("no database path given", "--db", "pass `--db PATH`");
  fs::path parent = file.parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    return fail("directory '" + parent.string() + "' does not exist", file.string(),
                "create it (mkdir -p) or pass `--db PATH` in an existing directory");
  auto placement = placement_of(file);
  if (!placement) return std::unexpected(placement.error());
  if (placement->mode == DbMode::direct) {
    say_once(placement_note(*placement, file.string(), ""), file);
    return open_direct(file);
  }
  auto storage = open_snapshot_writer(file);
  if (storage) say_once(placement_note(*placement, file.string(), (*storage)->live_.string()), file);
  return storage;
}

Result<std::unique_ptr<Storage>> Storage::open_readonly(const fs::path& file) {
  if (file.empty() || !exists_settled(file))
    return fail("no dlsweep database at this path", file.empty() ? "--db" : file.string(),
                "pass `--db PATH` with the database your study wrote, or run `dlsweep submit STUDY` first");
  auto placement = placement_of(file);
  if (!placement) return std::unexpected(placement.error());
  if (placement->mode == DbMode::snapshot && !is_wal_file(file)) {
    say_once(placement_note(*placement, file.string(), ""), file);
    struct stat st {};
    const bool known = ::stat(file.c_str(), &st) == 0;  // before the open: a newer one moves us on
    auto db = open_published_checked(file);
    if (!db) return std::unexpected(db.error());
    std::unique_ptr<Storage> s(new Storage(db->release(), true, file));
    s->follow_ = true;
    if (known) {
      s->dev_ = st.st_dev;
      s->ino_ = st.st_ino;
    }
    return s;
  }
  auto db = open_file(file, SQLITE_OPEN_READONLY);
  if (!db) return std::unexpected(db.error());
  auto probe = probe_schema(db->get());
  if (!probe && is_wal_file(file)) {
    // A WAL-mode file needs its -shm (and -wal) to be read: SQLite creates them when they are
    // missing, which a reader without write access to the directory cannot (a collaborator
    // after the sweep, a read-only mount, an archive). When no orchestrator writes the file
    // and everything is checkpointed into it, nothing else is needed: open it immutable (no
    // lock, no -wal/-shm read or created; SQLite's "Read-Only Databases" of WAL mode).
    const Error first = probe.error();
    if (writer_active(file))
      return fail(fmt::format("an orchestrator is writing this database, and reading it meanwhile needs read access "
                              "to {0}-wal and {0}-shm ({1})",
                              file.filename().string(), first.what),
                  file.string(),
                  "ask its owner for read access to the -wal and -shm files beside it (they follow the orchestrator's "
                  "umask), or read after the sweep has ended");
    if (!wal_empty(file))
      return fail(fmt::format("this database's last changes are still in {}-wal (its orchestrator did not close it), "
                              "and this reader cannot open that file for reading ({})",
                              file.filename().string(), first.what),
                  file.string(),
                  "ask its owner to run any dlsweep verb on it once (that folds the -wal into the file), or give "
                  "read access to the -wal and -shm files beside it");
    sqlite3* raw = nullptr;
    const std::string uri = immutable_uri(file);
    const int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_EXRESCODE,
                                   nullptr);
    DbPtr immutable(raw);
    if (rc != SQLITE_OK) return std::unexpected(first);
    keep_statements(raw);
    db = std::move(immutable);
    probe = probe_schema(db->get());
  }
  if (!probe) return std::unexpected(probe.error());
  sqlite3* h = db->get();
  if (auto s = check_schema(*probe, /*writable=*/false, file.string()); !s) return std::unexpected(s.error());
  if (auto s = exec(h, "PRAGMA query_only = ON", "making the handle query-only"); !s) return std::unexpected(s.error());
  return std::unique_ptr<Storage>(new Storage(db->release(), true, file));
}

Storage::Storage(sqlite3* db, bool read_only, fs::path file) : db_(db), read_only_(read_only), file_(std::move(file)) {}

Storage::~Storage() {
  bool published = true;
  if (publisher_) {
    if (auto s = publisher_->stop(); !s) {
      published = false;
      std::fprintf(stderr, "warning: the last snapshot of the database was not published: %s\n  the newest data is in "
                   "%s: copy it over %s (with `sqlite3 %s \".backup %s\"`) before anything else opens it\n",
                   s.error().message().c_str(), live_.c_str(), file_.c_str(), live_.c_str(), file_.c_str());
    }
    publisher_.reset();
  }
  release_statements(db_);
  sqlite3_close_v2(db_);
  if (!live_.empty() && published) remove_live_copy(live_);
}

Status Storage::publish() {
  if (!publisher_) return {};
  return publisher_->publish_now();
}

Status Storage::publish_if_pending() {
  if (!publisher_ || !publish_pending_ || in_batch_ || sqlite3_get_autocommit(db_) == 0) return {};
  publish_pending_ = false;
  return publisher_->publish_now();
}

bool Storage::refresh() const {
  if (!follow_ || same_file(file_, dev_, ino_)) return false;
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) return false;
  auto db = open_published_checked(file_);
  if (!db) return false;  // a snapshot we cannot read (yet): keep the one we have
  release_statements(db_);
  sqlite3_close_v2(db_);
  db_ = db->release();
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  ++reopens_;
  return true;
}

}  // namespace dlsweep::db
