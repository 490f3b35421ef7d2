// storage_fault.hpp — a database that fails on demand, for the engine's error paths: a
// trigger, added to the study's SQLite file through a second connection, aborts the
// statements it matches (e.g. "the trial's WAITING -> QUEUED transition") with an error,
// exactly as a full disk or an I/O error would make Storage fail. The fault is lifted when
// the object goes out of scope.
#pragma once

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace engine_test {

class StorageFault {
 public:
  /// Fails every UPDATE of a trial's state to `to_state` ("QUEUED", "COMPLETE", ...).
  static StorageFault on_transition_to(const std::filesystem::path& db, const std::string& to_state) {
    return StorageFault(db, fmt::format("BEFORE UPDATE OF state ON trials WHEN NEW.state = '{}'", to_state));
  }

  StorageFault(const std::filesystem::path& db, const std::string& when) : db_(db) {
    exec(fmt::format("CREATE TRIGGER dlsweep_test_fault {} BEGIN SELECT RAISE(ABORT, 'injected fault'); END;", when));
  }
  StorageFault(StorageFault&& o) noexcept : db_(std::move(o.db_)) { o.db_.clear(); }
  StorageFault(const StorageFault&) = delete;
  StorageFault& operator=(const StorageFault&) = delete;
  ~StorageFault() {
    if (!db_.empty()) exec("DROP TRIGGER IF EXISTS dlsweep_test_fault;");
  }

 private:
  void exec(const std::string& sql) {
    sqlite3* h = nullptr;
    REQUIRE(sqlite3_open(db_.c_str(), &h) == SQLITE_OK);
    sqlite3_busy_timeout(h, 10000);
    char* err = nullptr;
    int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(h);
    INFO(msg);
    REQUIRE(rc == SQLITE_OK);
  }
  std::filesystem::path db_;
};

}  // namespace engine_test
