// warm_start_test.cpp — the `warm_start_trials` table (schema version 4): the trials a
// study's search.warm_start copied in are stored with their 'warm_start' event, read back
// in number order exactly (params, values, constraints; an infinite violation survives),
// owned by the study (deleted with it), never trials; a version-3 file is migrated.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <sqlite3.h>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
using nlohmann::json;

namespace {

std::vector<WarmStartRow> two_rows() {
  WarmStartRow a{-2, "/x/early.db", "early", 0, json{{"x", 0.5}}, 1.5, {1.5, 30}, {0.0}};
  WarmStartRow b{-1, "/x/early.db", "early", 3, json{{"x", 0.25}}, 2.5, {2.5, 10},
                 {std::numeric_limits<double>::infinity()}};
  return {b, a};  // stored in any order, read by number
}

}  // namespace

TEST_CASE("warm start: stored with its event, read back by number, not trials, deleted with the study") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("later")));
  auto other = must(s->create_study(study_named("other")));
  must(s->add_warm_start_trials(study, two_rows(), "warm start: 2 COMPLETE trials of study 'early'"));
  auto rows = must(s->warm_start_trials(study));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].number == -2);
  CHECK(rows[0].params == json{{"x", 0.5}});
  CHECK(rows[0].value == 1.5);
  CHECK(rows[0].values == std::vector<double>{1.5, 30});
  CHECK(rows[0].source_study == "early");
  CHECK(rows[1].source_number == 3);
  REQUIRE(rows[1].constraints.size() == 1);
  CHECK(rows[1].constraints[0] > 1e300);  // an infinite violation stays violated
  CHECK(must(s->warm_start_trials(other)).empty());
  CHECK(must(s->list_trials(study)).empty());  // evidence for the sampler, not trials
  bool noted = false;
  for (const auto& e : must(s->events(study))) noted = noted || (e.kind == "warm_start" && e.reason.find("2 COMPLETE") != std::string::npos);
  CHECK(noted);
  // The same number twice is refused (UNIQUE): the copy is made once, at submit.
  CHECK_FALSE(s->add_warm_start_trials(study, two_rows(), "again").has_value());
  CHECK(must(s->warm_start_trials(study)).size() == 2);
  // Owned by the study: counted and deleted with it.
  CHECK(must(s->count_study_rows(study)).of("warm_start_trials") == 2);
  must(s->delete_study(study));
  CHECK(scalar(*s, "SELECT count(*) FROM warm_start_trials") == 0);
}

TEST_CASE("warm start: a version-3 database is migrated to the current version and keeps its data") {
  TempDir dir;
  auto file = dir / "old.db";
  {
    auto s = must(Storage::open_readwrite(file));
    auto study = must(s->create_study(study_named("old")));
    must(s->create_trial(study, 0, json{{"x", 1}}, "t0"));
  }
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "DROP TABLE warm_start_trials; ALTER TABLE studies DROP COLUMN home_db; "
                               "ALTER TABLE studies DROP COLUMN home_root; PRAGMA user_version = 3;", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = must(Storage::open_readwrite(file));
  CHECK(s->schema_version() == kSchemaVersion);
  auto study = must(s->find_study("old"));
  REQUIRE(study);
  CHECK(must(s->list_trials(study->id)).size() == 1);
  CHECK(must(s->warm_start_trials(study->id)).empty());
}
