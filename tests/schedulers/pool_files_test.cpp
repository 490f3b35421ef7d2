// The pilot pool's files (schedulers/slurm/pool_files.hpp) without a worker: one directory per
// task moved in one rename, claims keyed by (worker, task), a version in every record and in
// the pool, and no field that falls back silently.
#include <catch2/catch.hpp>

#include <fstream>

#include "schedulers/slurm/pool_files.hpp"
#include "schedulers/slurm/pool_worker.hpp"
#include "tests/support/temp_dir.hpp"

using namespace dlsweep::sched::pool;
namespace fs = std::filesystem;

namespace {

TaskFile task_of(const PoolDir& pool, const std::string& tag, int ranks = 1) {
  return TaskFile{"s/" + tag + "/0", pool.scripts_dir() / (tag + ".sh"), ranks, 0, 0};
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("pool files: a task is one directory: claimed, retired and put back by one rename each", "[pool][files]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const std::string tag = task_tag(7, 0);
  REQUIRE(pool.enqueue(tag, task_of(pool, tag)));
  CHECK(pool.queued_tags() == std::vector<std::string>{tag});
  REQUIRE(pool.claim(tag, "w1"));
  CHECK_FALSE(pool.claim(tag, "w2"));  // one winner
  CHECK(pool.queued_tags().empty());
  REQUIRE(pool.write_run("w1", tag, RunRecord{"node1", 1234, 1.0, ""}));
  REQUIRE(pool.write_exit("w1", tag, ExitRecord{3, 0, false, false, false, 2.5, false, ""}));
  auto claims = pool.claims();
  REQUIRE(claims.size() == 1);
  CHECK(claims[0].worker == "w1");
  CHECK(claims[0].tag == tag);
  CHECK(claims[0].has_run);
  CHECK(claims[0].has_exit);

  // Retired: the whole directory moves, records and all; nothing of it stays with the worker.
  REQUIRE(pool.retire(tag, "w1"));
  CHECK_FALSE(fs::exists(pool.claimed_dir("w1", tag)));
  CHECK(pool.claims().empty());
  auto done = pool.done_exit(tag);
  REQUIRE(done);
  CHECK(done->exit_code == 3);
  CHECK(fs::exists(pool.done_task_dir(tag) / "run"));
  CHECK(fs::exists(pool.done_task_dir(tag) / "task"));

  // Queued again (a retry of the same attempt): the old done/ directory goes, so that resume
  // never reads its exit as this run's.
  REQUIRE(pool.enqueue(tag, task_of(pool, tag)));
  CHECK_FALSE(pool.done_exit(tag));
  CHECK_FALSE(fs::exists(pool.done_task_dir(tag)));
  // No staging directory is left in the queue.
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(pool.queue_dir())) entries += e.path().filename() == tag ? 0 : 1;
  CHECK(entries == 0);
}

TEST_CASE("pool files: put back from a dead worker: the run without an end is named, its records go", "[pool][files]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const std::string tag = task_tag(3, 1);
  REQUIRE(pool.enqueue(tag, task_of(pool, tag)));
  REQUIRE(pool.claim(tag, "w2"));
  REQUIRE(pool.write_run("w2", tag, RunRecord{"node2", 555, 10.0, "w/w2/" + tag + ".lease"}));
  REQUIRE(pool.request_cancel("w2", tag));
  REQUIRE(pool.unclaim(tag, "w2"));
  CHECK(pool.claims().empty());
  CHECK_FALSE(fs::exists(pool.queued_dir(tag) / "run"));
  CHECK_FALSE(fs::exists(pool.queued_dir(tag) / "cancel"));
  auto t = PoolDir::read_task(pool.queued(tag));
  REQUIRE(t);
  REQUIRE(t->unfinished_runs.size() == 1);
  CHECK(t->unfinished_runs[0].pgid == 555);
  CHECK(t->unfinished_runs[0].lease == "w/w2/" + tag + ".lease");
  // The lease lives beside the task's directory, where the run left it, not inside it.
  CHECK(pool.in_worker("w2", tag, ".lease") == pool.worker_dir("w2") / (tag + ".lease"));
  // A cancel asked of a task that moved on meanwhile writes nothing anywhere.
  REQUIRE(pool.request_cancel("w2", tag));
  CHECK_FALSE(fs::exists(pool.claimed_dir("w2", tag)));
}

TEST_CASE("pool files: claims are keyed by worker and task, never merged", "[pool][files]") {
  // The same task under two workers (an old claim with its end, a live one without): the old
  // code merged them by task and read the live worker's end that did not exist, or finished the
  // live run from the old one's exit.
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const std::string tag = task_tag(5, 0);
  REQUIRE(pool.enqueue(tag, task_of(pool, tag)));
  REQUIRE(pool.claim(tag, "w1"));
  REQUIRE(pool.write_run("w1", tag, RunRecord{"n", 1, 1.0, ""}));
  REQUIRE(pool.write_exit("w1", tag, ExitRecord{}));
  fs::create_directories(pool.worker_dir("w2"));
  fs::copy(pool.claimed_dir("w1", tag), pool.claimed_dir("w2", tag), fs::copy_options::recursive);
  fs::remove(pool.in_worker("w2", tag, ".exit"));
  auto claims = pool.claims();
  REQUIRE(claims.size() == 2);
  CHECK(claims[0].worker == "w1");
  CHECK(claims[0].has_exit);
  CHECK(claims[1].worker == "w2");
  CHECK_FALSE(claims[1].has_exit);
  CHECK(claims[1].has_run);
  CHECK(pool.claims_of(tag).size() == 2);
  CHECK(pool.claims_of(task_tag(6, 0)).empty());
}

TEST_CASE("pool files: every record carries the version; another version or a missing field is refused by name",
          "[pool][files]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const std::string tag = task_tag(1, 0);
  REQUIRE(pool.enqueue(tag, task_of(pool, tag, 4)));
  CHECK(read_all(pool.queued(tag)).find("\"v\":2") != std::string::npos);
  auto ok = PoolDir::read_task(pool.queued(tag));
  REQUIRE(ok);
  CHECK(ok->ranks == 4);

  SECTION("a record of the layout before versions") {
    write(pool.queued(tag), R"({"token":"s/1/0","script":"x.sh","ranks":4,"timeout_s":0,"estimate_s":0})");
    auto t = PoolDir::read_task(pool.queued(tag));
    REQUIRE_FALSE(t);
    CHECK(t.error().what == "pool version 1 (a record without \"v\") here, and this dlsweep reads version 2");
    CHECK(t.error().where == pool.queued(tag).string());
    CHECK(t.error().fix.find("another version") != std::string::npos);
  }
  SECTION("a record of a newer dlsweep") {
    write(pool.queued(tag), R"({"v":3,"token":"s/1/0","script":"x.sh","ranks":4,"timeout_s":0,"estimate_s":0})");
    auto t = PoolDir::read_task(pool.queued(tag));
    REQUIRE_FALSE(t);
    CHECK(t.error().what == "pool version 3 here, and this dlsweep reads version 2");
  }
  SECTION("a task without ranks is refused, not run on one rank") {
    write(pool.queued(tag), R"({"v":2,"token":"s/1/0","script":"x.sh","timeout_s":0,"estimate_s":0})");
    auto t = PoolDir::read_task(pool.queued(tag));
    REQUIRE_FALSE(t);
    CHECK(t.error().what == "a pool record without \"ranks\"");
  }
  SECTION("an exit without its code, a run with a pgid of the wrong type") {
    REQUIRE(pool.claim(tag, "w1"));
    write(pool.in_worker("w1", tag, ".exit"), R"({"v":2,"signal":0})");
    auto e = PoolDir::read_exit(pool.in_worker("w1", tag, ".exit"));
    REQUIRE_FALSE(e);
    CHECK(e.error().what == "a pool record without \"exit_code\"");
    write(pool.in_worker("w1", tag, ".run"), R"({"v":2,"host":"n","pgid":"12","started":1})");
    auto r = PoolDir::read_run(pool.in_worker("w1", tag, ".run"));
    REQUIRE_FALSE(r);
    CHECK(r.error().what == "a pool record whose \"pgid\" is \"12\"");
  }
}

TEST_CASE("pool files: a pool of another layout is refused, by the orchestrator and by a worker", "[pool][files]") {
  test_support::TempDir dir;
  SECTION("the layout before versions: files in queue/, no version file") {
    PoolDir pool(dir.path() / "old");
    write(pool.queue_dir() / "t00000001-a0.task", R"({"token":"s/1/0","script":"x.sh","ranks":1})");
    auto st = pool.create();
    REQUIRE_FALSE(st);
    CHECK(st.error().what == "pool version 1 (no version file) here, and this dlsweep reads version 2");
    CHECK(st.error().where == pool.root().string());
  }
  SECTION("a newer one") {
    PoolDir pool(dir.path() / "new");
    write(pool.version_file(), "3\n");
    auto st = pool.create();
    REQUIRE_FALSE(st);
    CHECK(st.error().what == "pool version 3 here, and this dlsweep reads version 2");
    // A worker started on it says so and takes nothing (exit 2).
    WorkerConfig c;
    c.pool = pool.root();
    c.id = "w1";
    c.idle_s = 0;
    std::string said;
    CHECK(run_worker(c, [&](const std::string& l) { said += l + "\n"; }) == 2);
    CHECK(said.find("pool version 3 here, and this dlsweep reads version 2") != std::string::npos);
  }
  SECTION("a fresh pool gets the version file, and opens again") {
    PoolDir pool(dir.path() / "fresh");
    REQUIRE(pool.create());
    CHECK(read_all(pool.version_file()) == "2\n");
    CHECK(pool.create());
    CHECK(pool.check_version());
  }
}

TEST_CASE("pool files: a worker taken for gone that writes after its task was put back writes nothing the queue "
          "holds", "[pool][files]") {
  // The orchestrator puts a task back while its worker still lives (its allocation reported
  // lost): the worker's late run or exit record must fail, never land in the queued task
  // (a stale exit the next run would be finished from).
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const std::string tag = task_tag(9, 0);
  REQUIRE(pool.enqueue(tag, task_of(pool, tag)));
  REQUIRE(pool.claim(tag, "w1"));
  REQUIRE(pool.unclaim(tag, "w1"));
  CHECK_FALSE(pool.write_run("w1", tag, RunRecord{"n", 1, 1.0, ""}));
  CHECK_FALSE(pool.write_exit("w1", tag, ExitRecord{}));
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(pool.queued_dir(tag))) entries.push_back(e.path().filename().string());
  CHECK(entries == std::vector<std::string>{"task"});
  // And no staging directory is left in the queue.
  CHECK(pool.queued_tags() == std::vector<std::string>{tag});
  std::size_t hidden = 0;
  for (const auto& e : fs::directory_iterator(pool.queue_dir())) hidden += e.path().filename().string()[0] == '.';
  CHECK(hidden == 0);
}

TEST_CASE("pool files: the queue's order compares trial numbers and attempts as numbers", "[pool][files]") {
  // As text, trial-10000 sorts before trial-2000 and a10 before a9: the queue would run late
  // trials first once numbers outgrow their 4-digit padding.
  CHECK(tag_before(task_tag(1, 2000, 0), task_tag(2, 10000, 0)));
  CHECK_FALSE(tag_before(task_tag(2, 10000, 0), task_tag(1, 2000, 0)));
  CHECK(tag_before(task_tag(1, 3, 9), task_tag(1, 3, 10)));
  CHECK(tag_before(task_tag(1, 3, 10), task_tag(1, 4, 0)));
  CHECK(tag_before(task_tag(7, 0), task_tag(12, 0)));
  CHECK_FALSE(tag_before(task_tag(1, 5, 0), task_tag(1, 5, 0)));  // strict
  CHECK(tag_before("trial-5-a0", "trial-0005-a0") != tag_before("trial-0005-a0", "trial-5-a0"));

  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  auto put = [&](std::int64_t n, int attempt) {
    const std::string tag = task_tag(n, n, attempt);
    REQUIRE(pool.enqueue(tag, task_of(pool, tag)));
  };
  for (std::int64_t n : {10000, 2000, 999, 10001}) put(n, 0);
  put(2000, 10);
  put(2000, 9);
  CHECK(pool.queued_tags() == std::vector<std::string>{"trial-0999-a0", "trial-2000-a0", "trial-2000-a9",
                                                       "trial-2000-a10", "trial-10000-a0", "trial-10001-a0"});
}
