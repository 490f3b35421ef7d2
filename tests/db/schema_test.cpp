// schema_test.cpp — opening, migrating and refusing files: empty -> version 1, reopen is a
// no-op, foreign/garbage/newer files are refused with a message naming the file and the fix
// (and are left untouched).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

#include <sqlite3.h>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
namespace fs = std::filesystem;

namespace {

// Runs SQL on a plain sqlite3 connection (what a foreign application would do).
void raw_exec(const fs::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO((err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::set<std::string> schema_names(const Storage& s) {
  auto r = must(s.query("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"));
  std::set<std::string> names;
  for (auto& row : r.rows) names.insert(row[0].get<std::string>());
  return names;
}

}  // namespace

TEST_CASE("a new file is migrated to the current schema version") {
  TempDir dir;
  auto file = dir / "sweep.db";
  auto s = must(Storage::open_readwrite(file));
  CHECK(fs::exists(file));
  CHECK_FALSE(s->read_only());
  CHECK(s->schema_version() == kSchemaVersion);
  CHECK(scalar(*s, "PRAGMA user_version") == kSchemaVersion);
  CHECK(raw_scalar(file, "PRAGMA journal_mode") == "wal");
  CHECK(scalar(*s, "PRAGMA foreign_keys") == 1);
  auto names = schema_names(*s);
  for (const char* want : {"studies", "trials", "params", "records", "metrics", "jobs", "events", "trial_params",
                           "metric_latest", "trial_objective", "time_to_target", "trial_summary"}) {
    INFO(want);
    CHECK(names.count(want) == 1);
  }
  auto views = must(s->query("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name"));
  CHECK(views.rows.size() == 5);
}

TEST_CASE("reopening a current database changes nothing") {
  TempDir dir;
  auto file = dir / "sweep.db";
  std::string schema_before;
  {
    auto s = must(Storage::open_readwrite(file));
    must(s->create_study(study_named("a")));
    schema_before = scalar(*s, "SELECT group_concat(sql, ';') FROM sqlite_master").get<std::string>();
  }
  auto s = must(Storage::open_readwrite(file));
  CHECK(s->schema_version() == kSchemaVersion);
  CHECK(scalar(*s, "SELECT group_concat(sql, ';') FROM sqlite_master") == schema_before);
  auto studies = must(s->list_studies());
  REQUIRE(studies.size() == 1);
  CHECK(studies[0].name == "a");
  CHECK(must(s->events(studies[0].id)).size() == 1);
}

TEST_CASE("read-write open fails clearly when the directory is missing") {
  TempDir dir;
  auto file = dir / "no-such-dir" / "sweep.db";
  auto s = Storage::open_readwrite(file);
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.error().message(), Catch::Contains("does not exist") && Catch::Contains("no-such-dir"));
  CHECK_FALSE(fs::exists(file.parent_path()));
}

TEST_CASE("an SQLite file of another application is refused and left untouched") {
  TempDir dir;
  auto file = dir / "other.db";
  raw_exec(file, "CREATE TABLE foo(x); INSERT INTO foo VALUES (1);");
  const std::string before = slurp(file);
  for (bool rw : {true, false}) {
    auto s = rw ? Storage::open_readwrite(file) : Storage::open_readonly(file);
    REQUIRE_FALSE(s.has_value());
    INFO(s.error().message());
    CHECK_THAT(s.error().message(), Catch::Contains("not a dlsweep database") && Catch::Contains(file.string()));
    CHECK_FALSE(s.error().fix.empty());
  }
  CHECK(slurp(file) == before);
  CHECK_FALSE(fs::exists(file.string() + "-wal"));
}

TEST_CASE("a file with our version number but another application id is refused") {
  TempDir dir;
  auto file = dir / "other.db";
  raw_exec(file, "CREATE TABLE trials(x); PRAGMA user_version = 1;");
  auto s = Storage::open_readwrite(file);
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.error().message(), Catch::Contains("not a dlsweep database"));
}

TEST_CASE("a file that is not SQLite at all is refused and left untouched") {
  TempDir dir;
  auto file = dir / "notes.db";
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 0; i < 200; ++i) out << "this is a text file, not a database\n";
  }
  const std::string before = slurp(file);
  for (bool rw : {true, false}) {
    auto s = rw ? Storage::open_readwrite(file) : Storage::open_readonly(file);
    REQUIRE_FALSE(s.has_value());
    INFO(s.error().message());
    CHECK_THAT(s.error().message(), Catch::Contains("not an SQLite database") && Catch::Contains(file.string()));
    CHECK_THAT(s.error().fix, Catch::Contains("--db"));
  }
  CHECK(slurp(file) == before);
}

TEST_CASE("a database from a newer dlsweep is refused") {
  TempDir dir;
  auto file = dir / "future.db";
  { must(Storage::open_readwrite(file)); }
  raw_exec(file, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  for (bool rw : {true, false}) {
    auto s = rw ? Storage::open_readwrite(file) : Storage::open_readonly(file);
    REQUIRE_FALSE(s.has_value());
    CHECK_THAT(s.error().message(), Catch::Contains("created by a newer dlsweep"));
  }
}

TEST_CASE("read-only open of a missing or empty file says how to get a database") {
  TempDir dir;
  auto missing = Storage::open_readonly(dir / "nothing.db");
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message(), Catch::Contains("--db PATH") && Catch::Contains("dlsweep submit"));
  CHECK_FALSE(fs::exists(dir / "nothing.db"));  // a reader never creates the file

  { std::ofstream(dir / "empty.db"); }
  auto empty = Storage::open_readonly(dir / "empty.db");
  REQUIRE_FALSE(empty.has_value());
  CHECK_THAT(empty.error().message(), Catch::Contains("empty"));
}

TEST_CASE("read-only open works on a database nobody holds open") {
  TempDir dir;
  auto file = dir / "sweep.db";
  {
    auto rw = must(Storage::open_readwrite(file));
    must(rw->create_study(study_named("closed")));
  }
  auto ro = must(Storage::open_readonly(file));
  CHECK(ro->read_only());
  CHECK(ro->schema_version() == kSchemaVersion);
  auto found = must(ro->find_study("closed"));
  REQUIRE(found.has_value());
  CHECK(found->objective_mode == "max");
}
