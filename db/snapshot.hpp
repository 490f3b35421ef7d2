// snapshot.hpp — snapshot mode's file work (placement.hpp): publishing the live database as
// one file at the shared path, atomically, and starting a live copy from what is published.
//
// Invariants:
//  - A published file is whole and self-contained: written by SQLite's backup API into a
//    temp file in the destination's own directory, switched to journal_mode DELETE (a
//    reader needs no -wal or -shm), synced, then renamed over the destination, and the
//    directory synced. A reader opens the old file or the new one, never a mix; a crash
//    at any point leaves the previous snapshot in place (and at most a temp file, which
//    the next writer removes).
//  - The publisher reads the live database through a connection of its own, so it copies
//    committed data only (WAL: it never blocks the writer, nor sees an open batch).
//  - Publishing is throttled: a background thread publishes when the database changed
//    (PRAGMA data_version) and the interval has passed: kPublishIntervalS, or
//    kPublishCostShare times as long as the last publish took, whichever is longer (a big
//    database on a slow filesystem is copied at most 1/kPublishCostShare of the time);
//    publish_now() does it at once
//    (before a launch: write-ahead); stop() publishes what is left and ends the thread.
// Internal to db/.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <sqlite3.h>

#include "common/result.hpp"

namespace dlsweep::db {

/// `src` (its "main" database) copied into `dst` (created or overwritten; not renamed),
/// journal_mode DELETE, synced.
Status copy_database(sqlite3* src, const std::filesystem::path& dst);

/// The temp file a publish of `published` writes before its rename (unique to this process).
std::filesystem::path publish_temp_path(const std::filesystem::path& published);

/// Removes temp files left in the directory of `published` by publishers that died
/// (the caller holds the database lock: no other publisher is running).
void remove_stale_publish_temps(const std::filesystem::path& published);

/// `src` published atomically as `published` (see the invariants).
Status publish_database(sqlite3* src, const std::filesystem::path& published);

/// Starts the live copy `live` from `published` (removing any older live copy and its
/// -wal/-shm); with no published file, `live` is simply absent (a new database).
Status restore_live_copy(const std::filesystem::path& published, const std::filesystem::path& live);

/// Removes `live` and its -wal/-shm/-journal.
void remove_live_copy(const std::filesystem::path& live);

/// True when the file's SQLite header says WAL mode (written in direct mode, e.g. by an
/// older dlsweep): it must be opened the ordinary way, with its -wal.
bool is_wal_file(const std::filesystem::path& file);

/// "file:/abs/path?immutable=1", percent-escaped: an open that takes no lock and reads no
/// journal, true of a published snapshot (it is replaced, never changed in place).
std::string immutable_uri(const std::filesystem::path& file);

/// A read-only connection to a published database: immutable, or the ordinary way for a
/// WAL-mode file (is_wal_file). The caller closes it.
Result<sqlite3*> open_published(const std::filesystem::path& file);

/// The background publisher waits at least this many times the last publish's duration.
inline constexpr double kPublishCostShare = 10.0;

class SnapshotPublisher {
 public:
  /// Opens its own read-only connection to `live` and starts the thread.
  static Result<std::unique_ptr<SnapshotPublisher>> start(const std::filesystem::path& live,
                                                          const std::filesystem::path& published,
                                                          double interval_s);
  ~SnapshotPublisher();  ///< stop() if not stopped (errors are lost then)
  SnapshotPublisher(const SnapshotPublisher&) = delete;
  SnapshotPublisher& operator=(const SnapshotPublisher&) = delete;

  /// Publishes now if anything was committed since the last publish (or `force`).
  Status publish_now(bool force = false);
  /// Ends the thread, then publishes what is left; idempotent.
  Status stop();
  /// How many snapshots this publisher has written.
  std::uint64_t published_count() const;

 private:
  SnapshotPublisher(sqlite3* src, std::filesystem::path published, double interval_s);
  void loop();
  Status publish_locked(bool force);  ///< the caller holds mu_

  sqlite3* src_;
  std::filesystem::path published_;
  double interval_s_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::optional<std::int64_t> last_version_;  ///< data_version at the last publish
  std::uint64_t count_ = 0;
  double last_cost_s_ = 0;  ///< how long the last publish took
  std::optional<Error> background_error_;    ///< the thread's last failure, reported by the next call
  std::thread thread_;
};

}  // namespace dlsweep::db
