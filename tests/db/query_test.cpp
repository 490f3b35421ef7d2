// query_test.cpp — the read-only passthrough: writes and connection changes are refused on
// read-only and read-write handles alike, one statement at a time, values come back as JSON
// scalars, and a reader works while the orchestrator holds the database open and writes.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;

TEST_CASE("query refuses anything that writes or reconfigures, on both kinds of handle") {
  TempDir dir;
  auto file = dir / "sweep.db";
  auto rw = must(Storage::open_readwrite(file));
  auto study = must(rw->create_study(study_named("x")));
  must(rw->create_trial(study, 0, {{"lr", 0.1}}, "d"));
  auto ro = must(Storage::open_readonly(file));

  const std::vector<std::string> writes = {
      "INSERT INTO studies(name, spec_json, objective_metric, objective_mode, created_at) VALUES('y','{}','m','max',0)",
      "UPDATE trials SET state = 'COMPLETE'",
      "DELETE FROM events",
      "DROP TABLE metrics",
      "CREATE TABLE mine(x)",
      "CREATE TEMP TABLE mine(x)",
      "ATTACH DATABASE ':memory:' AS other",
      "PRAGMA user_version = 5",
      "PRAGMA user_version=5;",
      "PRAGMA journal_mode = DELETE",
      "PRAGMA foreign_keys = OFF",
      "PRAGMA wal_checkpoint",
      "BEGIN",
      "SAVEPOINT s",
      "VACUUM",
      "REINDEX",
      "ANALYZE",
      "SELECT 1; DELETE FROM events",
      "SELECT 1; SELECT 2",
  };
  for (Storage* s : {rw.get(), ro.get()}) {
    for (const auto& sql : writes) {
      INFO((s->read_only() ? "read-only: " : "read-write: ") << sql);
      auto r = s->query(sql);
      REQUIRE_FALSE(r.has_value());
      const std::string m = r.error().message();
      INFO(m);
      const bool refused = m.find("dlsweep query is read-only") != std::string::npos ||
                           m.find("one statement at a time") != std::string::npos;
      CHECK(refused);
      if (m.find("read-only") != std::string::npos)
        CHECK_THAT(m, Catch::Contains("use SELECT; the orchestrator is the only writer"));
    }
    CHECK_THAT(s->query("SELECT 1; SELECT 2").error().message(), Catch::Contains("one statement at a time"));
    CHECK_THAT(s->query("PRAGMA user_version = 5").error().message(), Catch::Contains("read-only"));
  }
  // Nothing changed, and the read-write handle still enforces foreign keys.
  CHECK(scalar(*ro, "PRAGMA user_version") == kSchemaVersion);
  CHECK(scalar(*rw, "PRAGMA foreign_keys") == 1);
  CHECK(scalar(*ro, "SELECT count(*) FROM events") == 2);
  CHECK(scalar(*ro, "SELECT state FROM trials") == "WAITING");
  CHECK(scalar(*ro, "SELECT count(*) FROM sqlite_master WHERE name = 'mine'") == 0);
  CHECK(raw_scalar(file, "PRAGMA journal_mode") == "wal");
  CHECK_THAT(rw->query("PRAGMA journal_mode").error().message(), Catch::Contains("read-only"));
}

TEST_CASE("query returns column names and JSON scalars") {
  TempDir dir;
  auto rw = must(Storage::open_readwrite(dir / "sweep.db"));
  auto r = must(rw->query("SELECT 42 AS i, 2.5 AS r, 'txt' AS t, NULL AS n, x'00ff10' AS b  -- trailing comment"));
  REQUIRE(r.columns == std::vector<std::string>{"i", "r", "t", "n", "b"});
  REQUIRE(r.rows.size() == 1);
  CHECK(r.rows[0][0].is_number_integer());
  CHECK(r.rows[0][0] == 42);
  CHECK(r.rows[0][1].is_number_float());
  CHECK(r.rows[0][1] == 2.5);
  CHECK(r.rows[0][2] == "txt");
  CHECK(r.rows[0][3].is_null());
  CHECK(r.rows[0][4] == "<blob 3 bytes>");

  CHECK(must(rw->query("SELECT 1;  ")).rows.size() == 1);
  CHECK(must(rw->query("SELECT 1; -- done\n")).rows.size() == 1);
  auto info = must(rw->query("PRAGMA table_info(trials)"));
  CHECK(info.rows.size() == 10);
  CHECK(must(rw->query("SELECT * FROM trials")).rows.empty());
  CHECK_THAT(rw->query("").error().message(), Catch::Contains("empty"));
  CHECK_THAT(rw->query("SELEC 1").error().message(), Catch::Contains("does not compile"));
}

TEST_CASE("a read-only handle works while the orchestrator holds the database read-write") {
  TempDir dir;
  auto file = dir / "sweep.db";
  auto rw = must(Storage::open_readwrite(file));
  auto study = must(rw->create_study(study_named("live")));
  auto trial = must(rw->create_trial(study, 0, nlohmann::json::object(), "d"));
  must(rw->ingest(trial, 0, {eval_record(0, 10, 1.0, {{"val_acc", 0.3}})}));

  auto ro = must(Storage::open_readonly(file));
  CHECK(scalar(*ro, "SELECT count(*) FROM records") == 1);

  // The writer goes on while the reader stays open; the reader sees each commit.
  must(rw->ingest(trial, 0, {eval_record(1, 20, 2.0, {{"val_acc", 0.4}})}));
  CHECK(scalar(*ro, "SELECT count(*) FROM records") == 2);
  CHECK(must(ro->summaries(study)).size() == 1);

  // While a write transaction is open (another connection, so it can be held), readers
  // are not blocked and see the last committed state (WAL).
  sqlite3* writer = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &writer) == SQLITE_OK);
  REQUIRE(sqlite3_exec(writer, "BEGIN IMMEDIATE; DELETE FROM metrics;", nullptr, nullptr, nullptr) == SQLITE_OK);
  CHECK(scalar(*ro, "SELECT count(*) FROM metrics") == 2);
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
  CHECK(scalar(*ro, "SELECT count(*) FROM metrics") == 2);

  // Reader-side typed API.
  CHECK(must(ro->find_study("live"))->id == study);
  CHECK(must(ro->list_trials(study)).size() == 1);
  CHECK(must(ro->events(study)).size() == 2);
  // The typed write API fails on a read-only handle, too.
  auto w = ro->create_study(study_named("nope"));
  REQUIRE_FALSE(w.has_value());
  CHECK_THAT(w.error().message(), Catch::Contains("read-only"));
  CHECK_FALSE(ro->ingest(trial, 0, {eval_record(9, 90, 9.0, {{"val_acc", 0.9}})}).has_value());
  CHECK(scalar(*rw, "SELECT count(*) FROM records") == 2);
  CHECK_FALSE(must(rw->find_study("nope")).has_value());
}
