// db_test_support.hpp — helpers shared by the db/ tests: a unique temporary directory that
// removes itself, a fresh read-write Storage with one study, and small record builders.
#pragma once

#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "db/storage.hpp"

namespace dlsweep::db::testing {

/// The tests' one temporary directory (tests/support/temp_dir.hpp).
using test_support::TempDir;

/// Unwraps a Result in a test, printing the error's message when it failed.
template <class T>
T must(Result<T> r) {
  INFO((r ? std::string() : r.error().message()));
  REQUIRE(r.has_value());
  return std::move(*r);
}
inline void must(Status s) {
  INFO((s ? std::string() : s.error().message()));
  REQUIRE(s.has_value());
}

inline NewStudy study_named(const std::string& name, const std::string& mode = "max",
                            std::optional<double> target = 0.9, const std::string& metric = "val_acc") {
  NewStudy s;
  s.name = name;
  s.spec_json = R"({"name":")" + name + R"("})";
  s.source_path = name + ".yaml";
  s.root_dir = "runs/" + name;
  s.objective_metric = metric;
  s.objective_mode = mode;
  s.objective_target = target;
  return s;
}

/// An eval record with the given metrics.
inline protocol::Record eval_record(std::int64_t seq, std::int64_t step, double wall_s,
                                    std::map<std::string, double> metrics,
                                    protocol::RecordKind kind = protocol::RecordKind::eval) {
  protocol::Record r;
  r.seq = seq;
  r.kind = kind;
  r.step = step;
  r.epoch = static_cast<double>(step) / 100.0;
  r.samples = step * 256;
  r.wall_s = wall_s;
  r.metrics = std::move(metrics);
  return r;
}

/// Runs a one-value query (e.g. "SELECT count(*) FROM metrics") and returns the value.
inline nlohmann::json scalar(const Storage& s, const std::string& sql) {
  auto r = must(s.query(sql));
  REQUIRE(r.rows.size() == 1);
  REQUIRE(r.rows[0].size() == 1);
  return r.rows[0][0];
}

/// The first column of the first row of `sql` on a separate plain sqlite3 connection, as
/// text (for what query() rightly refuses, e.g. PRAGMA journal_mode, which may write).
inline std::string raw_scalar(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

}  // namespace dlsweep::db::testing
