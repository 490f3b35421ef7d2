// study_delete_test.cpp — Storage::count_study_rows and delete_study (`dlsweep delete`):
// every row of one study goes, from every table, and nothing of another study; one
// transaction (a failure at the last step leaves everything); an unknown study and a
// read-only handle are errors.
#include <catch2/catch.hpp>

#include <sqlite3.h>

#include "db_test_support.hpp"

using namespace dlsweep;
using namespace dlsweep::db;
using namespace dlsweep::db::testing;
using nlohmann::json;

namespace {

// A study with two trials, records, metrics, jobs, events and an enqueued request.
std::int64_t populated(Storage& s, const std::string& name) {
  auto study = must(s.create_study(study_named(name)));
  for (int n = 0; n < 2; ++n) {
    auto trial = must(s.create_trial(study, n, json{{"lr", 0.1 * (n + 1)}, {"batch_size", 64}}, "d"));
    must(s.transition({trial, TrialState::waiting, TrialState::queued, 0, "orchestrator", "", {}}));
    must(s.record_job({trial, 0, "local", name + "-job-" + std::to_string(n), "running"}));
    must(s.ingest(trial, 0, {eval_record(0, 10, 1.0, {{"val_acc", 0.5}, {"loss", 1.0}}),
                             eval_record(1, 20, 2.0, {{"val_acc", 0.7}, {"loss", 0.5}})}));
  }
  must(s.enqueue_trial(study, "cli:1", json{{"lr", 0.3}}, "user"));
  return study;
}

std::int64_t count(const Storage& s, const std::string& table) {
  return scalar(s, "SELECT count(*) FROM " + table).get<std::int64_t>();
}

const char* const kTables[] = {"studies", "trials", "params", "records", "metrics", "jobs", "events", "enqueued_trials"};

}  // namespace

TEST_CASE("delete_study removes every row of one study from every table, and only its rows", "[delete]") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto gone = populated(*s, "gone");
  auto kept = populated(*s, "kept");
  auto kept_rows = must(s->count_study_rows(kept));

  auto counted = must(s->count_study_rows(gone));
  CHECK(counted.of("studies") == 1);
  CHECK(counted.of("trials") == 2);
  CHECK(counted.of("params") == 4);
  CHECK(counted.of("records") == 4);
  CHECK(counted.of("metrics") == 8);
  CHECK(counted.of("jobs") == 2);
  CHECK(counted.of("enqueued_trials") == 1);
  CHECK(counted.of("events") == 1 + 2 * 2 + 1);  // created study, created + queued per trial, enqueue
  CHECK(counted.by_table.front().first == "studies");

  auto deleted = must(s->delete_study(gone));
  CHECK(deleted.by_table == counted.by_table);
  for (const char* t : kTables) {
    INFO(t);
    CHECK(count(*s, t) == kept_rows.of(t));  // what is left is exactly the other study
  }
  CHECK_FALSE(must(s->find_study("gone")).has_value());
  CHECK(must(s->count_study_rows(kept)).by_table == kept_rows.by_table);
  // The name is free again.
  CHECK(s->create_study(study_named("gone")).has_value());
}

TEST_CASE("delete_study is one transaction: a failure at its last step deletes nothing", "[delete]") {
  TempDir dir;
  auto s = must(Storage::open_readwrite(dir / "sweep.db"));
  auto study = populated(*s, "stuck");
  std::map<std::string, std::int64_t> before;
  for (const char* t : kTables) before[t] = count(*s, t);
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open((dir / "sweep.db").c_str(), &raw) == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "CREATE TRIGGER keep_studies BEFORE DELETE ON studies BEGIN SELECT RAISE(ABORT, 'kept'); END",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(raw);
  }
  auto r = s->delete_study(study);
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error().message(), Catch::Contains("kept"));
  for (const char* t : kTables) {
    INFO(t);
    CHECK(count(*s, t) == before[t]);
  }
}

TEST_CASE("delete_study and count_study_rows: an unknown study is not_found; a read-only handle cannot delete",
          "[delete]") {
  TempDir dir;
  {
    auto s = must(Storage::open_readwrite(dir / "sweep.db"));
    populated(*s, "a");
    auto missing = s->delete_study(999);
    REQUIRE_FALSE(missing.has_value());
    CHECK(missing.error().is(ErrorKind::not_found));
    CHECK_FALSE(s->count_study_rows(999).has_value());
  }
  auto ro = must(Storage::open_readonly(dir / "sweep.db"));
  auto id = must(ro->find_study("a"))->id;
  CHECK(must(ro->count_study_rows(id)).of("trials") == 2);
  CHECK_FALSE(ro->delete_study(id).has_value());
  CHECK(count(*ro, "trials") == 2);
}
