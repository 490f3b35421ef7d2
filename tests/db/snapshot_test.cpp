// snapshot_test.cpp — snapshot mode (db/placement.hpp, db/snapshot.hpp), forced with
// DLSWEEP_DB_MODE=snapshot on a local directory: the live copy on "this node", the file at
// the path published from it (a new trial at once, write-ahead; the rest on close),
// readers that take no lock and follow newer snapshots, and a writer that starts again from
// what is published (the node that held the live copy died).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "db/snapshot.hpp"
#include "db_test_support.hpp"
#include "tests/support/scoped_env.hpp"

using namespace dlsweep::db;
using namespace dlsweep::db::testing;
namespace fs = std::filesystem;
using test_support::ScopedEnv;

namespace {

int header_byte(const fs::path& file, int at) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(at);
  return in.get();
}

std::int64_t count(const Storage& s, const std::string& table) {
  return scalar(s, "SELECT count(*) FROM " + table).get<std::int64_t>();
}

}  // namespace

TEST_CASE("snapshot mode: the writer works on a live copy and publishes the path from it") {
  TempDir dir;
  ScopedEnv mode("DLSWEEP_DB_MODE", "snapshot");
  ScopedEnv live_dir("DLSWEEP_DB_LIVE_DIR", (dir / "node-local").string());
  const fs::path db = dir / "shared" / "sweep.db";
  fs::create_directories(db.parent_path());
  fs::path live;
  {
    auto w = must(Storage::open_readwrite(db));
    CHECK(w->snapshot_mode());
    live = w->live_path();
    CHECK(live.parent_path().parent_path() == dir / "node-local");
    CHECK(fs::exists(live));
    // Published at once, in journal_mode DELETE (bytes 18/19 of the header are 1), and
    // nothing beside it: a reader needs no -wal/-shm.
    REQUIRE(fs::exists(db));
    CHECK(header_byte(db, 18) == 1);
    CHECK(header_byte(db, 19) == 1);
    CHECK_FALSE(fs::exists(db.string() + "-wal"));
    CHECK_FALSE(fs::exists(db.string() + "-shm"));

    auto study = must(w->create_study(study_named("s")));
    // A new trial is on the published file before create_trial returns (write-ahead: its
    // job is launched next), even inside a write batch once the batch commits.
    must(w->create_trial(study, 0, {{"lr", 0.1}}, "runs/s/trial-0"));
    {
      auto r = must(Storage::open_readonly(db));
      CHECK(r->snapshot_mode());
      CHECK(count(*r, "trials") == 1);
    }
    must(w->begin_batch());
    must(w->create_trial(study, 1, {{"lr", 0.2}}, "runs/s/trial-1"));
    must(w->commit_batch());
    {
      auto r = must(Storage::open_readonly(db));
      CHECK(count(*r, "trials") == 2);
      CHECK(count(*r, "params") == 2);
    }
    // Other writes reach the file within the publish interval, or on close.
    auto trial = must(w->list_trials(study)).front();
    must(w->ingest(trial.id, 0, {eval_record(0, 10, 1.0, {{"val_acc", 0.5}})}));
  }
  CHECK_FALSE(fs::exists(live));  // closed cleanly: the live copy is gone
  auto r = must(Storage::open_readonly(db));
  CHECK(count(*r, "records") == 1);
  CHECK(scalar(*r, "SELECT state FROM studies").get<std::string>() == "RUNNING");
}

TEST_CASE("snapshot mode: a reader takes no lock and moves on to a newer snapshot") {
  TempDir dir;
  ScopedEnv mode("DLSWEEP_DB_MODE", "snapshot");
  ScopedEnv live_dir("DLSWEEP_DB_LIVE_DIR", (dir / "node-local").string());
  const fs::path db = dir / "sweep.db";
  auto w = must(Storage::open_readwrite(db));
  auto study = must(w->create_study(study_named("s")));
  must(w->create_trial(study, 0, {{"lr", 0.1}}, "runs/s/trial-0"));
  auto r = must(Storage::open_readonly(db));
  const auto v0 = scalar(*r, "PRAGMA data_version").get<std::int64_t>();
  CHECK(scalar(*r, "PRAGMA data_version").get<std::int64_t>() == v0);  // no new snapshot: no change
  CHECK(count(*r, "trials") == 1);
  must(w->create_trial(study, 1, {{"lr", 0.2}}, "runs/s/trial-1"));  // published at once
  // What `dlsweep serve` polls: data_version through query() moves, and the reads that
  // follow see the new snapshot.
  CHECK(scalar(*r, "PRAGMA data_version").get<std::int64_t>() != v0);
  CHECK(count(*r, "trials") == 2);
  CHECK(must(r->list_trials(study)).size() == 2);
  // The reader holds no lock on the file: a writer's publish (a rename over it) and an
  // exclusive lock by anyone else both go through while it is open.
  sqlite3* other = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &other, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  CHECK(sqlite3_exec(other, "BEGIN EXCLUSIVE; ROLLBACK;", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(other);
}

TEST_CASE("snapshot mode: a new writer starts from what is published, not from a stale live copy") {
  TempDir dir;
  ScopedEnv mode("DLSWEEP_DB_MODE", "snapshot");
  ScopedEnv live_dir("DLSWEEP_DB_LIVE_DIR", (dir / "node-local").string());
  const fs::path db = dir / "sweep.db";
  std::int64_t study = 0;
  fs::path live;
  {
    auto w = must(Storage::open_readwrite(db));
    study = must(w->create_study(study_named("s")));
    must(w->create_trial(study, 0, {{"lr", 0.1}}, "runs/s/trial-0"));
    live = w->live_path();
  }
  // A live copy left behind (this node's orchestrator was killed long ago) holding what
  // the shared file no longer says: the next writer must not start from it.
  {
    sqlite3* stale = nullptr;
    REQUIRE(sqlite3_open_v2(live.c_str(), &stale, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_exec(stale, "CREATE TABLE stale(x)", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(stale);
  }
  // ... and a temp file of a publisher that died mid-publish.
  const fs::path leftover = dir / ".sweep.db.publish-deadhost-99.tmp";
  std::ofstream(leftover) << "half a database";
  {
    auto w = must(Storage::open_readwrite(db));
    CHECK(count(*w, "trials") == 1);
    CHECK(scalar(*w, "SELECT count(*) FROM sqlite_master WHERE name = 'stale'").get<std::int64_t>() == 0);
    CHECK_FALSE(fs::exists(leftover));
    must(w->create_trial(study, 1, {{"lr", 0.2}}, "runs/s/trial-1"));
  }
  auto r = must(Storage::open_readonly(db));
  CHECK(count(*r, "trials") == 2);
}

TEST_CASE("snapshot mode: a database written in direct mode (WAL) is taken over whole") {
  TempDir dir;
  ScopedEnv live_dir("DLSWEEP_DB_LIVE_DIR", (dir / "node-local").string());
  const fs::path db = dir / "sweep.db";
  std::int64_t study = 0;
  {
    ScopedEnv mode("DLSWEEP_DB_MODE", "direct");
    auto w = must(Storage::open_readwrite(db));
    CHECK_FALSE(w->snapshot_mode());
    study = must(w->create_study(study_named("s")));
    must(w->create_trial(study, 0, {{"lr", 0.1}}, "runs/s/trial-0"));
    CHECK(header_byte(db, 18) == 2);  // WAL
    // A reader in snapshot mode opens a WAL file the ordinary way (its -wal is part of it).
    ScopedEnv snap("DLSWEEP_DB_MODE", "snapshot");
    auto r = must(Storage::open_readonly(db));
    CHECK(count(*r, "trials") == 1);
  }
  ScopedEnv mode("DLSWEEP_DB_MODE", "snapshot");
  {
    auto w = must(Storage::open_readwrite(db));
    CHECK(count(*w, "trials") == 1);
  }
  CHECK(header_byte(db, 18) == 1);
  CHECK_FALSE(fs::exists(db.string() + "-wal"));
  auto r = must(Storage::open_readonly(db));
  CHECK(count(*r, "trials") == 1);
}

TEST_CASE("immutable_uri escapes what a URI would misread") {
  CHECK(immutable_uri("/a b/x?y#z%.db") == "file:/a%20b/x%3Fy%23z%25.db?immutable=1");
}
