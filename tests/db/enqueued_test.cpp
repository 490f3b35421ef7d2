// enqueued_test.cpp — the `enqueued_trials` table (schema version 2) and the study-spec
// update of `resume --add-trials`: idempotent requests with their event, a request taken by
// its trial in one transaction (never twice), compare-and-swap on spec_json, and the
// migration of a version-1 file.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
using nlohmann::json;

namespace {

std::size_t count_events(const Storage& s, std::int64_t study, const std::string& kind) {
  std::size_t n = 0;
  for (const auto& e : must(s.events(study))) n += e.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("enqueue: a request is recorded once, with its event, in order") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("a")));
  auto first = must(s->enqueue_trial(study, "file:1", json{{"batch_size", 4096}}, "user"));
  REQUIRE(first.has_value());
  CHECK(first->params == json{{"batch_size", 4096}});
  CHECK_FALSE(first->trial_id);
  // The same request read again (a file recorded, then a crash before it was removed).
  auto again = must(s->enqueue_trial(study, "file:1", json{{"batch_size", 4096}}, "user"));
  CHECK_FALSE(again.has_value());
  auto second = must(s->enqueue_trial(study, "cli:2", json{{"lr_rule", "sqrt"}}, "user"));
  REQUIRE(second.has_value());
  auto rows = must(s->list_enqueued(study));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].request == "file:1");
  CHECK(rows[1].request == "cli:2");
  CHECK(rows[1].params["lr_rule"] == "sqrt");
  CHECK(rows[0].who == "user");
  CHECK(count_events(*s, study, "enqueue") == 2);
  // The same request id in another study is another request.
  auto other = must(s->create_study(study_named("b")));
  CHECK(must(s->enqueue_trial(other, "file:1", json{{"x", 1}}, "user")).has_value());
  // Bad input is refused without a row.
  CHECK_FALSE(s->enqueue_trial(study, "x", json::array(), "user").has_value());
  CHECK_FALSE(s->enqueue_trial(study, "", json{{"x", 1}}, "user").has_value());
  CHECK_FALSE(s->enqueue_trial(999, "y", json{{"x", 1}}, "user").has_value());
  CHECK(must(s->list_enqueued(study)).size() == 2);
}

TEST_CASE("enqueue: a request becomes exactly one trial, atomically") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("a")));
  auto req = must(s->enqueue_trial(study, "r1", json{{"batch_size", 4096}}, "user"));
  REQUIRE(req);
  auto trial = must(s->create_enqueued_trial(req->id, study, 0, json{{"batch_size", 4096}, {"lr", 0.1}}, "t0"));
  auto rows = must(s->list_enqueued(study));
  REQUIRE(rows[0].trial_id);
  CHECK(*rows[0].trial_id == trial);
  CHECK(must(s->get_trial(trial)).params["batch_size"] == 4096);
  // Taken already: refused, and the trial it would have created is rolled back with it.
  auto twice = s->create_enqueued_trial(req->id, study, 1, json{{"batch_size", 4096}}, "t1");
  REQUIRE_FALSE(twice.has_value());
  CHECK_THAT(twice.error().message(), Catch::Contains("already became a trial"));
  CHECK(must(s->list_trials(study)).size() == 1);
  // Inside a write batch (what the engine does) it joins the batch like create_trial.
  auto req2 = must(s->enqueue_trial(study, "r2", json{{"batch_size", 64}}, "user"));
  must(s->begin_batch());
  must(s->create_enqueued_trial(req2->id, study, 1, json{{"batch_size", 64}}, "t1"));
  must(s->commit_batch());
  CHECK(must(s->list_trials(study)).size() == 2);
  CHECK(must(s->list_enqueued(study))[1].trial_id.has_value());
}

TEST_CASE("update_study_spec: compare-and-swap with its event") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = must(s->create_study(study_named("a")));
  const std::string old_spec = must(s->find_study("a"))->spec_json;
  EventRow why;
  why.kind = "add_trials";
  why.who = "user";
  why.reason = "3 -> 5";
  must(s->update_study_spec(study, old_spec, R"({"name":"a","search":{"trials":5}})", why));
  CHECK(must(s->find_study("a"))->spec_json == R"({"name":"a","search":{"trials":5}})");
  CHECK(count_events(*s, study, "add_trials") == 1);
  // A stale expectation changes nothing.
  auto stale = s->update_study_spec(study, old_spec, R"({"name":"a","search":{"trials":9}})", why);
  REQUIRE_FALSE(stale.has_value());
  CHECK(must(s->find_study("a"))->spec_json == R"({"name":"a","search":{"trials":5}})");
  CHECK(count_events(*s, study, "add_trials") == 1);
}

TEST_CASE("a version-1 database is migrated to version 2 and keeps its data") {
  TempDir dir;
  auto file = dir / "old.db";
  {
    auto s = must(Storage::open_readwrite(file));
    auto study = must(s->create_study(study_named("old")));
    must(s->create_trial(study, 0, json{{"x", 1}}, "t0"));
  }
  {  // What a dlsweep of schema version 1 left: no enqueued_trials table.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "DROP TABLE enqueued_trials; DROP TABLE warm_start_trials; ALTER TABLE studies DROP COLUMN home_db; "
                               "ALTER TABLE studies DROP COLUMN home_root; PRAGMA user_version = 1;", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto ro = Storage::open_readonly(file);
  REQUIRE_FALSE(ro.has_value());
  CHECK_THAT(ro.error().message(), Catch::Contains("older dlsweep") && Catch::Contains("resume"));
  auto s = must(Storage::open_readwrite(file));
  CHECK(s->schema_version() == kSchemaVersion);
  CHECK(kSchemaVersion == 5);
  auto study = must(s->find_study("old"));
  REQUIRE(study);
  CHECK(must(s->list_trials(study->id)).size() == 1);
  CHECK(must(s->list_enqueued(study->id)).empty());
  CHECK(must(s->enqueue_trial(study->id, "r", json{{"x", 2}}, "user")).has_value());
}
