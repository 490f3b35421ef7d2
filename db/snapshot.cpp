// snapshot.cpp — see snapshot.hpp.
#include "db/snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "db/sqlite_handle.hpp"

namespace dlsweep::db {

namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  return buf;
}

Status sync_path(const fs::path& p, bool directory) {
  int fd = ::open(p.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot open to sync: {}", std::strerror(errno)), p.string());
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some filesystems (FUSE ones among them) refuse fsync of a directory: the rename is
  // still atomic there, only its durability across a power cut is theirs to give.
  if (rc != 0 && !(directory && (err == EINVAL || err == ENOTSUP || err == ENOSYS)))
    return fail(fmt::format("fsync failed: {}", std::strerror(err)), p.string());
  return {};
}

struct Closer {
  sqlite3* db;
  ~Closer() { sqlite3_close_v2(db); }
};

void remove_with_sidecars(const fs::path& p) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(p.string() + suffix, ec);
}

}  // namespace

Status copy_database(sqlite3* src, const fs::path& dst) {
  remove_with_sidecars(dst);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(dst.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Closer close{raw};
  if (rc != SQLITE_OK)
    return fail(fmt::format("cannot create the copy: {}", raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)), dst.string(),
                "check that its directory is writable and has space");
  // A temp file until it is renamed: no journal and no syncs while it is written (a crash
  // leaves a temp file, never a published one); one fsync below, before the rename.
  if (auto s = exec(raw, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", "preparing the copy"); !s) return s;
  sqlite3_backup* b = sqlite3_backup_init(raw, "main", src, "main");
  if (!b) return std::unexpected(sqlite_error(raw, sqlite3_errcode(raw), "starting a database copy"));
  // One step copies everything in one read transaction of the source: a consistent copy.
  // Busy only while another connection holds an exclusive lock (a checkpoint): brief.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    rc = sqlite3_backup_step(b, -1);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(5);
  } while ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && std::chrono::steady_clock::now() < give_up);
  const int step_rc = rc;
  rc = sqlite3_backup_finish(b);
  if (step_rc != SQLITE_DONE)
    return std::unexpected(sqlite_error(raw, step_rc, "copying the database (backup)"));
  if (rc != SQLITE_OK) return std::unexpected(sqlite_error(raw, rc, "finishing a database copy"));
  if (auto s = exec(raw, "PRAGMA journal_mode = DELETE", "switching the copy to journal_mode DELETE"); !s) return s;
  if (sqlite3_close(raw) != SQLITE_OK) return fail("cannot close the copy", dst.string());
  close.db = nullptr;
  return sync_path(dst, false);
}

fs::path publish_temp_path(const fs::path& published) {
  return published.parent_path() /
         fmt::format(".{}.publish-{}-{}.tmp", published.filename().string(), host_name(), ::getpid());
}

void remove_stale_publish_temps(const fs::path& published) {
  const std::string prefix = fmt::format(".{}.publish-", published.filename().string());
  std::error_code ec;
  fs::path dir = published.parent_path().empty() ? fs::path(".") : published.parent_path();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix) && name.find(".tmp") != std::string::npos) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

Status publish_database(sqlite3* src, const fs::path& published) {
  const fs::path tmp = publish_temp_path(published);
  if (auto s = copy_database(src, tmp); !s) {
    remove_with_sidecars(tmp);
    return fail_in(s.error(), "publishing the database snapshot " + published.string());
  }
  if (::rename(tmp.c_str(), published.c_str()) != 0) {
    const int err = errno;
    remove_with_sidecars(tmp);
    return fail(fmt::format("cannot publish the snapshot: rename: {}", std::strerror(err)), published.string(),
                "check that the directory of --db is writable");
  }
  const fs::path dir = published.parent_path().empty() ? fs::path(".") : published.parent_path();
  return sync_path(dir, true);
}

Status restore_live_copy(const fs::path& published, const fs::path& live) {
  remove_live_copy(live);
  std::error_code ec;
  if (!fs::exists(published, ec)) return {};
  auto src = open_published(published);
  if (!src) return std::unexpected(src.error());
  Closer close{*src};
  if (auto s = copy_database(*src, live); !s)
    return fail_in(s.error(), "starting the live copy " + live.string() + " from " + published.string());
  return {};
}

void remove_live_copy(const fs::path& live) { remove_with_sidecars(live); }

bool is_wal_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char header[20] = {};
  if (!in.read(header, sizeof header)) return false;
  if (std::memcmp(header, "SQLite format 3", 16) != 0) return false;
  return header[18] == 2 || header[19] == 2;
}

std::string immutable_uri(const fs::path& file) {
  std::string out = "file:";
  for (unsigned char c : fs::absolute(file).lexically_normal().string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out + "?immutable=1";
}

Result<sqlite3*> open_published(const fs::path& file) {
  // A publish renames a new file over the path. On a network or FUSE filesystem, looking a
  // name up and opening what it named are two steps: an open that races a rename can find
  // the old file gone (ENOENT/ESTALE, SQLITE_CANTOPEN). The next try finds the new one.
  constexpr int kTries = 50;
  for (int attempt = 1;; ++attempt) {
    const bool wal = is_wal_file(file);
    sqlite3* raw = nullptr;
    const std::string name = wal ? file.string() : immutable_uri(file);
    const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE | (wal ? 0 : SQLITE_OPEN_URI);
    const int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
    if (rc == SQLITE_OK) return raw;
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    if ((rc & 0xff) != SQLITE_CANTOPEN || attempt >= kTries)
      return fail("cannot open the database: " + msg, file.string(), "check that the path is a readable file");
    sqlite3_sleep(10);
  }
}

// --- SnapshotPublisher

Result<std::unique_ptr<SnapshotPublisher>> SnapshotPublisher::start(const fs::path& live, const fs::path& published,
                                                                     double interval_s) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(live.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_EXRESCODE, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close_v2(raw);
    return fail("cannot open the live database to publish it: " + msg, live.string());
  }
  sqlite3_busy_timeout(raw, 5000);
  std::unique_ptr<SnapshotPublisher> p(new SnapshotPublisher(raw, published, interval_s));
  p->thread_ = std::thread([q = p.get()] { q->loop(); });
  return p;
}

SnapshotPublisher::SnapshotPublisher(sqlite3* src, fs::path published, double interval_s)
    : src_(src), published_(std::move(published)), interval_s_(interval_s) {}

SnapshotPublisher::~SnapshotPublisher() {
  (void)stop();
  sqlite3_close_v2(src_);
}

void SnapshotPublisher::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto period = std::chrono::duration<double>(std::max(interval_s_, kPublishCostShare * last_cost_s_));
    wake_.wait_for(lock, period, [this] { return stopping_; });
    if (stopping_) break;
    if (auto s = publish_locked(false); !s) background_error_ = s.error();
  }
}

Status SnapshotPublisher::publish_locked(bool force) {
  auto st = Statement::prepare(src_, "PRAGMA data_version");
  if (!st) return std::unexpected(st.error());
  auto row = st->step();
  if (!row) return std::unexpected(row.error());
  const std::int64_t version = *row ? st->int64(0) : -1;
  st->reset();
  if (!force && last_version_ && *last_version_ == version) return {};
  const auto start = std::chrono::steady_clock::now();
  if (auto s = publish_database(src_, published_); !s) return s;
  last_cost_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  last_version_ = version;
  ++count_;
  return {};
}

Status SnapshotPublisher::publish_now(bool force) {
  std::lock_guard lock(mu_);
  if (background_error_) {
    Error e = *background_error_;
    background_error_.reset();
    // The failure may have passed (a full disk freed): try again before reporting it.
    if (auto s = publish_locked(true); s) return {};
    return std::unexpected(e);
  }
  if (stopped_) return {};
  return publish_locked(force);
}

Status SnapshotPublisher::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return {};
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  stopped_ = true;
  background_error_.reset();
  return publish_locked(false);
}

std::uint64_t SnapshotPublisher::published_count() const {
  std::lock_guard lock(mu_);
  return count_;
}

}  // namespace dlsweep::db
