// The pilot pool's backend (schedulers/slurm/pool_backend.hpp) on a fake controller, with the
// test playing the worker through the pool's files: no Slurm, no worker process. What the
// orchestrator decides from the files: when `stop` is written, and that nothing holds the
// event loop once the engine says no more work will come.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>

#include "fake_slurm_driver.hpp"
#include "schedulers/slurm/pool_backend.hpp"

using namespace dlsweep::sched;
using namespace slurm_test;
using K = JobEventKind;
namespace fs = std::filesystem;

namespace {

struct PoolFixture {
  TempDir dir;
  boost::asio::io_context io;
  std::shared_ptr<FakeController> ctl = std::make_shared<FakeController>();
  Recorder rec;
  std::unique_ptr<SlurmPoolBackend> backend;

  /// Jobs on the fake controller (the workers' allocations).
  std::size_t worker_jobs() {
    std::lock_guard l(ctl->m);
    return ctl->table.size();
  }
  PoolFixture() {
    SlurmOptions o;
    o.script_dir = dir.path() / "slurm";
    o.workers = 2;
    o.poll_min_s = 0.02;
    o.poll_max_s = 0.08;
    auto b = SlurmPoolBackend::create(io, o, "/bin/true", std::make_unique<FakeDriver>(ctl));
    REQUIRE(b.has_value());
    backend = std::move(*b);
    backend->set_event_handler(rec.handler());
  }
  JobSpec job(int trial) const {
    JobSpec s;
    s.study = "pool";
    s.trial_id = trial;
    s.attempt = 0;
    s.argv = {"/bin/true"};
    s.workdir = dir.path() / ("t" + std::to_string(trial));
    return s;
  }
  /// Plays worker w1: takes the trial's task, runs it (on paper) and ends it with `code`.
  void run_as_worker(int trial, int code) {
    const auto& pool = backend->pool();
    const std::string tag = pool::task_tag(trial, 0);
    REQUIRE(pool.claim(tag, "w1"));
    REQUIRE(pool.write_run("w1", tag, pool::RunRecord{"node1", 4242, 1.0, ""}));
    pool::ExitRecord e;
    e.exit_code = code;
    e.seconds = 0.1;
    REQUIRE(pool.write_exit("w1", tag, e));
  }
};

}  // namespace

TEST_CASE("pool backend: `stop` only when the engine says no more work will come; then nothing holds the loop",
          "[slurm][pool]") {
  PoolFixture f;
  const fs::path stop = f.backend->pool().stop_file();
  auto first = f.backend->submit(f.job(1));
  REQUIRE(first);
  REQUIRE(run_until(f.io, [&] { return f.rec.kinds(*first) == std::vector<K>{K::queued}; }, 5));
  f.run_as_worker(1, 0);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*first) != nullptr; }, 5));
  CHECK(f.rec.terminal(*first)->kind == K::exited);
  CHECK(f.backend->active() == 0);

  // A generation boundary: the task map is empty for longer than any heuristic's delay (the
  // old backend wrote `stop` 2 s after its map emptied, and an idle worker retired), and the
  // next trial comes after it. No `stop` in between.
  run_until(f.io, [] { return false; }, 3.0);
  CHECK_FALSE(fs::exists(stop));
  auto second = f.backend->submit(f.job(2));
  REQUIRE(second);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*second, K::queued); }, 5));
  f.run_as_worker(2, 3);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*second) != nullptr; }, 5));
  CHECK(f.rec.terminal(*second)->exit_code == 3);
  CHECK_FALSE(fs::exists(stop));

  // The sweep is over: `stop` at once, and the loop ends by itself although the workers'
  // allocations are still on the controller (they exit on `stop`; nobody waits for that).
  f.backend->no_more_work();
  CHECK(fs::exists(stop));
  f.io.restart();
  const auto t0 = std::chrono::steady_clock::now();
  f.io.run_for(std::chrono::seconds(20));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));  // returned: no work left, not the 20 s
  CHECK(f.backend->pool().claims().empty());
  CHECK(f.backend->pool().done_exit(pool::task_tag(2, 0))->exit_code == 3);
}

TEST_CASE("pool backend: no `stop` while trials are left, and a submit after it takes it back", "[slurm][pool]") {
  PoolFixture f;
  const fs::path stop = f.backend->pool().stop_file();
  auto id = f.backend->submit(f.job(1));
  REQUIRE(id);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::queued); }, 5));
  f.backend->no_more_work();  // not so: a trial is still in the pool
  CHECK_FALSE(fs::exists(stop));
  f.run_as_worker(1, 0);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*id) != nullptr; }, 5));
  f.backend->no_more_work();
  CHECK(fs::exists(stop));
  auto again = f.backend->submit(f.job(2));  // a resumed study's `--add-trials`, a new generation
  REQUIRE(again);
  CHECK_FALSE(fs::exists(stop));
}

TEST_CASE("pool backend: --dry-run shows the worker allocations and trial scripts submit sends, built by the same "
          "functions", "[slurm][pool][dry-run]") {
  PoolFixture f;
  const fs::path out = f.dir.path() / "dry";
  fs::create_directories(out);
  std::vector<JobSpec> jobs{f.job(1), f.job(2), f.job(3)};
  auto lines = f.backend->dry_run(jobs, out);
  REQUIRE(lines);
  REQUIRE_FALSE(lines->empty());
  CHECK(lines->front() == "pilot workers: 2 allocation(s) of 1 task(s) each run the study's 3 trial(s) one after "
                          "another (backend.workers: 2)");
  auto read_dir = [](const fs::path& d, const std::string& ext) {
    std::vector<std::string> texts;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().extension() == ext) {
        std::ifstream in(e.path());
        texts.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      }
    std::sort(texts.begin(), texts.end());
    return texts;
  };
  // Submitted for real: the workers' index (their command lines) is the dry run's, word for word.
  REQUIRE(f.backend->submit(f.job(1)));
  REQUIRE(f.backend->submit(f.job(2)));
  REQUIRE(run_until(f.io, [&] { return !read_dir(f.dir.path() / "slurm", ".index").empty(); }, 5));
  std::vector<std::string> dry_workers, real_workers;
  // (Below the header line, which names the script file.)
  auto tasks_of = [](const std::string& index) { return index.substr(index.find('\n') + 1); };
  for (const auto& t : read_dir(out, ".index"))
    if (t.find("--idle-s") != std::string::npos) dry_workers.push_back(tasks_of(t));
  for (const auto& t : read_dir(f.dir.path() / "slurm", ".index"))
    if (t.find("--idle-s") != std::string::npos) real_workers.push_back(tasks_of(t));
  REQUIRE(dry_workers.size() == 1);
  REQUIRE(real_workers.size() == 1);
  CHECK(dry_workers == real_workers);
  for (const char* word : {"--ranks", "--time-limit-min", "--margin-s", "--idle-s"})
    CHECK(dry_workers.front().find(word) != std::string::npos);
  // And each trial's script is the one the pool queues for a worker (the tag aside).
  auto queued = read_dir(f.backend->pool().scripts_dir(), ".sh");
  REQUIRE(queued.size() == 2);
  auto dry_scripts = read_dir(out, ".sh");
  std::size_t trial_scripts = 0;
  for (const auto& t : dry_scripts) trial_scripts += t.find("t00000001-a0") != std::string::npos ? 1 : 0;
  CHECK(trial_scripts == 1);
}

TEST_CASE("pool backend: its polling backs off while nothing changes and is quick again after a change",
          "[slurm][pool]") {
  CHECK(next_pool_scan_s(0, false) == 0.25);
  CHECK(next_pool_scan_s(0.25, false) == 0.5);
  CHECK(next_pool_scan_s(0.5, false) == 1.0);
  CHECK(next_pool_scan_s(1.0, false) == 1.0);
  CHECK(next_pool_scan_s(1.0, true) == 0.25);
}

TEST_CASE("pool files: the claims of workers known to have ended are not read", "[slurm][pool]") {
  TempDir dir;
  pool::PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  for (int i = 1; i <= 2; ++i) {
    const std::string tag = pool::task_tag(i, 0);
    REQUIRE(pool.enqueue(tag, pool::TaskFile{"s/" + tag + "/0", pool.scripts_dir() / "x.sh", 1, 0, 0, false, {}, {}, {}, {}}));
    REQUIRE(pool.claim(tag, "w" + std::to_string(i)));
  }
  CHECK(pool.claims().size() == 2);
  auto live = pool.claims({"w1"});
  REQUIRE(live.size() == 1);
  CHECK(live[0].worker == "w2");
}

TEST_CASE("pool backend: a worker whose allocation Slurm requeues: its trial is `requeued` (not put back, no "
          "replacement worker), then `started` again by the restarted worker's new run, never by the old one",
          "[slurm][pool]") {
  PoolFixture f;
  auto id = f.backend->submit(f.job(1));
  REQUIRE(id);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::queued) && f.worker_jobs() == 1; }, 5));
  CHECK(f.backend->workers_started() == 1);
  // The worker's job, as the controller shows it: RUNNING, then requeued (restart 1: PENDING
  // with BeginTime, as Slurm 22.05 shows a requeued job), then RUNNING again.
  auto worker_job = [&](JobState st, int restarts, const std::string& reason) {
    std::lock_guard l(f.ctl->m);
    REQUIRE(f.ctl->table.size() == 1);
    auto& r = f.ctl->table.front();
    r.state = st;
    r.state_name = std::string(to_string(st));
    r.restart_count = restarts;
    r.reason = reason;
  };
  worker_job(JobState::running, 0, "");
  const auto& pool = f.backend->pool();
  const std::string tag = pool::task_tag(1, 0);
  REQUIRE(pool.claim(tag, "w1"));
  REQUIRE(pool.write_run("w1", tag, pool::RunRecord{"node1", 4242, 1.0, ""}));
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::started); }, 5));

  worker_job(JobState::pending, 1, "BeginTime");
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::requeued); }, 5));
  const JobEvent* requeued = nullptr;
  for (const auto& e : f.rec.events)
    if (e.job_id == *id && e.kind == K::requeued) requeued = &e;
  REQUIRE(requeued);
  CHECK(requeued->message.find("the allocation of worker w1 (Slurm job ") == 0);
  CHECK(requeued->message.find("was requeued by Slurm (restart 1): the trial runs again from its checkpoint when the "
                               "worker restarts") != std::string::npos);
  // The task stays with w1 (the restarted worker takes it back itself), and the earlier start's
  // run record, still there, is not taken for a new run.
  run_until(f.io, [] { return false; }, 1.5);
  CHECK(f.rec.kinds(*id) == std::vector<K>{K::queued, K::started, K::requeued});
  REQUIRE(pool.claims_of(tag).size() == 1);
  CHECK(pool.claims_of(tag).front().worker == "w1");
  CHECK_FALSE(fs::exists(pool.queued(tag)));

  // The allocation runs again: the same worker takes its task back (the old run record goes)
  // and runs it again.
  worker_job(JobState::running, 1, "");
  fs::remove(pool.in_worker("w1", tag, ".run"));
  REQUIRE(pool.write_run("w1", tag, pool::RunRecord{"node2", 5151, 2.0, ""}));
  REQUIRE(run_until(f.io, [&] { return f.rec.kinds(*id).size() == 4; }, 5));
  pool::ExitRecord e;
  e.seconds = 0.2;
  REQUIRE(pool.write_exit("w1", tag, e));
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*id) != nullptr; }, 5));
  CHECK(f.rec.kinds(*id) == std::vector<K>{K::queued, K::started, K::requeued, K::started, K::exited});
  CHECK(f.rec.terminal(*id)->exit_code == 0);
  CHECK(f.backend->workers_started() == 1);  // requeued, not ended: no replacement
}

TEST_CASE("pool backend: a task is named after the trial's number, as its directory is ('pool:trial-0003-a0'), not "
          "the database's id",
          "[slurm][pool]") {
  PoolFixture f;
  JobSpec j = f.job(7);  // database id 7
  j.number = 3;          // trial 3 of its study
  auto id = f.backend->submit(j);
  REQUIRE(id);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::queued); }, 5));
  std::string native;
  for (const auto& ev : f.rec.events)
    if (ev.job_id == *id && ev.kind == K::queued) native = ev.native_id;
  CHECK(native == "pool:trial-0003-a0");
  CHECK(fs::is_directory(f.backend->pool().queue_dir() / "trial-0003-a0"));
  CHECK(pool::task_tag(7, 3, 1) == "trial-0003-a1");
  CHECK(pool::task_tag(7, -1, 1) == "t00000007-a1");  // no number: the database's id, as before
}
