// SlurmBackend's logic against an in-memory controller (FakeDriver): batching into arrays,
// one query per poll with back-off, a controller that is down, an ambiguous submission,
// vanished jobs, cancel batching, refused submissions. Fast and deterministic; the same
// behaviours are checked against a real controller in slurm_cluster_test.cpp.
#include <catch2/catch.hpp>

#include <sstream>

#include "fake_slurm_driver.hpp"
#include "schedulers/slurm/backend.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
using namespace slurm_test;
using K = JobEventKind;

using Fixture = FakeSlurmFixture;

TEST_CASE("fake slurm: jobs of one turn go out as one array - events carry native ids", "[slurm][backend]") {
  Fixture f;
  auto ids = f.submit(6);
  CHECK(f.backend->active() == 6);
  CHECK(f.submits() == 0);  // nothing until the loop turns
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  REQUIRE(f.submits() == 1);
  CHECK(f.ctl->submits[0].array == "0-5%4");
  CHECK(f.ctl->submits[0].job_name == "dlsweep:fake");
  CHECK(f.backend->native_id(ids[5]) == "100_5");
  CHECK(f.rec.events[0].native_id == "100_0");
  // The index and the script were written before sbatch.
  CHECK(std::filesystem::exists(f.ctl->submits[0].script_path));
  CHECK(std::filesystem::exists(f.ctl->submits[0].script_path.parent_path() /
                                (f.ctl->submits[0].script_path.stem().string() + ".index")));

  f.ctl->set(100, 0, JobState::running);
  f.ctl->set(100, 1, JobState::failed, 3 << 8);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(ids[1]) && f.rec.has(ids[0], K::started); }, 5));
  CHECK(f.rec.kinds(ids[1]) == std::vector<K>{K::queued, K::started, K::exited});
  CHECK(f.rec.terminal(ids[1])->exit_code == 3);
  CHECK(f.rec.terminal(ids[1])->native_id == "100_1");
  f.ctl->set_all(JobState::completed);
  REQUIRE(run_until(f.io, [&] { return f.rec.all_done(ids); }, 5));
  for (auto& id : ids) CHECK(f.rec.terminal_count(id) == 1);
  CHECK(f.backend->active() == 0);
  // Nothing live: the backend leaves the io_context idle.
  f.io.restart();
  CHECK(f.io.run_for(std::chrono::milliseconds(300)) == 0);
}

TEST_CASE("fake slurm: one query per poll, backing off while nothing changes", "[slurm][backend]") {
  Fixture f;
  auto ids = f.submit(3);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  run_until(f.io, [] { return false; }, 0.8);
  std::vector<std::chrono::steady_clock::time_point> t;
  {
    std::lock_guard l(f.ctl->m);
    t = f.ctl->query_times;
  }
  REQUIRE(t.size() >= 4);
  CHECK(t.size() <= 12);  // 0.8 s at 0.02 s doubling to 0.16 s: about 8
  auto gap = [&](std::size_t i) { return std::chrono::duration<double>(t[i + 1] - t[i]).count(); };
  CHECK(gap(2) > gap(0) * 1.5);                  // doubling
  CHECK(gap(t.size() - 2) < 0.16 * 1.5 + 0.05);  // capped at poll_max_s
  f.ctl->set_all(JobState::completed);
  REQUIRE(run_until(f.io, [&] { return f.rec.all_done(ids); }, 5));
  CHECK(f.backend->stats().queries == f.ctl->query_times.size());
}

TEST_CASE("fake slurm: a controller that is down loses no job", "[slurm][backend]") {
  Fixture f;
  auto ids = f.submit(2);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  f.ctl->set_all(JobState::running);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(ids[1], K::started); }, 5));
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->down = true;
  }
  run_until(f.io, [] { return false; }, 0.6);
  CHECK(f.backend->stats().query_failures >= 2);
  CHECK(f.rec.terminal(ids[0]) == nullptr);
  CHECK_FALSE(f.logs.empty());
  CHECK_THAT(f.logs.back(), Catch::Contains("Unable to contact slurm controller"));
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->down = false;
  }
  f.ctl->set_all(JobState::completed);
  REQUIRE(run_until(f.io, [&] { return f.rec.all_done(ids); }, 5));
  for (auto& id : ids) CHECK(f.rec.terminal(id)->kind == K::exited);
}

TEST_CASE("fake slurm: submission waits out a down controller, in order", "[slurm][backend]") {
  Fixture f;
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->max_array = 1001;
  }
  // MaxArraySize first (succeeds), then the controller goes down before sbatch.
  auto ids = f.submit(1);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->down = true;
  }
  auto later = f.submit(2, 10);
  run_until(f.io, [] { return false; }, 0.3);
  CHECK(f.submits() == 1);
  CHECK(f.backend->stats().submit_failures >= 1);
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->down = false;
  }
  REQUIRE(run_until(f.io, [&] { return f.queued(later); }, 5));
  CHECK(f.submits() == 2);
  CHECK(f.ctl->submits[1].array == "0-1");  // room for 3 more: no throttle needed
}

TEST_CASE("fake slurm: an sbatch that timed out but was accepted is adopted, not resubmitted", "[slurm][backend]") {
  Fixture f;
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->accept_then_timeout = true;
  }
  auto ids = f.submit(3);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  CHECK(f.submits() == 1);  // one array in the controller
  CHECK(f.ctl->list_calls >= 1);
  CHECK(f.backend->native_id(ids[2]) == "100_2");
}

TEST_CASE("fake slurm: a job gone from squeue and accounting is lost after vanish_polls", "[slurm][backend]") {
  Fixture f(4, 2);
  auto ids = f.submit(2);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  f.ctl->set_all(JobState::running);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(ids[1], K::started); }, 5));
  f.ctl->erase(100, 1);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(ids[1]) != nullptr; }, 5));
  CHECK(f.rec.terminal(ids[1])->kind == K::lost);
  CHECK_THAT(f.rec.terminal(ids[1])->message, Catch::Contains("vanished from the controller"));
  CHECK(f.rec.terminal(ids[0]) == nullptr);
  CHECK(f.backend->stats().accounting_queries >= 2);
}

TEST_CASE("fake slurm: cancels of one turn go out as one call with array expressions", "[slurm][backend]") {
  Fixture f(2);
  auto ids = f.submit(5);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  auto extra = f.submit(1, 10);  // waits in the backend: 5 live tasks >= 2
  run_until(f.io, [] { return false; }, 0.1);
  CHECK(f.submits() == 1);
  f.backend->cancel(extra[0]);
  f.backend->cancel(ids[1]);
  f.backend->cancel(ids[3]);
  f.backend->cancel(ids[4]);
  f.backend->cancel(ids[4]);          // twice: no-op
  f.backend->cancel("no-such-job");   // unknown: no-op
  REQUIRE(run_until(f.io, [&] { return !f.ctl->cancels.empty() && f.rec.terminal(extra[0]); }, 5));
  CHECK(f.rec.kinds(extra[0]) == std::vector<K>{K::cancelled});
  REQUIRE(f.ctl->cancels.size() == 1);
  CHECK(f.ctl->cancels[0] == std::vector<std::string>{"100_[1,3-4]"});
  for (int t : {1, 3, 4}) f.ctl->set(100, t, JobState::cancelled, 15);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(ids[4]) != nullptr; }, 5));
  CHECK(f.rec.kinds(ids[3]) == std::vector<K>{K::queued, K::cancelled});
  CHECK(f.rec.terminal(ids[3])->message == "cancelled");
  // Cancelling every live task cancels the whole array.
  f.backend->cancel(ids[0]);
  f.backend->cancel(ids[2]);
  REQUIRE(run_until(f.io, [&] { return f.ctl->cancels.size() == 2; }, 5));
  CHECK(f.ctl->cancels[1] == std::vector<std::string>{"100"});
}

TEST_CASE("fake slurm: the throttle holds later arrays back until the earlier ones drain", "[slurm][backend]") {
  Fixture f(2);
  auto first = f.submit(3);
  REQUIRE(run_until(f.io, [&] { return f.queued(first); }, 5));
  auto second = f.submit(2, 10);
  run_until(f.io, [] { return false; }, 0.2);
  CHECK(f.submits() == 1);
  CHECK(f.ctl->submits[0].array == "0-2%2");
  f.ctl->set(100, 0, JobState::completed);
  f.ctl->set(100, 1, JobState::completed);
  REQUIRE(run_until(f.io, [&] { return f.queued(second); }, 5));
  REQUIRE(f.submits() == 2);
  CHECK(f.ctl->submits[1].array == "0-1%1");  // 2 - 1 task still live in the first array
}

TEST_CASE("fake slurm: a refused submission is lost with sbatch's message - bad jobs are refused at once",
          "[slurm][backend]") {
  Fixture f;
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->refuse = "Batch job submission failed: Invalid partition name specified";
  }
  auto ids = f.submit(2);
  REQUIRE(run_until(f.io, [&] { return f.rec.all_done(ids); }, 5));
  CHECK(f.rec.terminal(ids[0])->kind == K::lost);
  CHECK_THAT(f.rec.terminal(ids[0])->message, Catch::Contains("Invalid partition name"));
  CHECK(f.backend->active() == 0);

  JobSpec bad = f.job(9);
  bad.argv.clear();
  CHECK_FALSE(f.backend->submit(bad).has_value());
  bad = f.job(9);
  bad.env["NOT A NAME"] = "x";
  auto r = f.backend->submit(bad);
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error().message(), Catch::Contains("fake/9/0"));
  CHECK(f.backend->active() == 0);
}

TEST_CASE("fake slurm: a job found on the controller is adopted and followed to its end", "[slurm][backend]") {
  Fixture f;
  {
    // Submitted by an earlier orchestrator: array 100, task 1 is ours.
    SubmitRequest req;
    req.array = "0-2";
    req.job_name = "dlsweep:fake";
    FakeDriver(f.ctl).submit(req);
  }
  f.ctl->set(100, 1, JobState::running);
  CHECK_FALSE(f.backend->adopt(f.job(7), "100_x").has_value());
  CHECK_FALSE(f.backend->adopt(f.job(7), "").has_value());
  auto id = f.backend->adopt(f.job(7), "100_1");
  REQUIRE(id.has_value());
  CHECK(f.backend->active() == 1);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::started); }, 5));
  f.ctl->set(100, 1, JobState::failed, 4 << 8);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*id) != nullptr; }, 5));
  CHECK(f.rec.kinds(*id) == std::vector<K>{K::queued, K::started, K::exited});
  CHECK(f.rec.terminal(*id)->exit_code == 4);
  CHECK(f.rec.terminal(*id)->trial_id == 7);
  CHECK(f.submits() == 1);  // nothing was submitted by the backend
}

namespace {

// The #SBATCH lines of a script, but the comment (it holds the batch's tag).
std::vector<std::string> directives(const std::string& script) {
  std::vector<std::string> out;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("#SBATCH", 0) == 0 && line.find("--comment") == std::string::npos) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("fake slurm: a dry run writes every script submit sends, split the same way, and submits nothing",
          "[slurm][backend][dry-run]") {
  Fixture f(4);
  f.ctl->max_array = 3;  // 5 jobs of one shape: two arrays
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 7; ++i) {
    JobSpec j = f.job(i);
    if (i >= 5) j.ranks = 2;  // another shape: its own array
    jobs.push_back(j);
  }
  const auto out = f.dir.path() / "dry";
  std::filesystem::create_directories(out);
  auto wrote = f.backend->dry_run(jobs, out);
  REQUIRE(wrote.has_value());
  CHECK(f.submits() == 0);
  CHECK_FALSE(std::filesystem::exists(jobs[0].workdir));  // creates nothing of the trials
  std::vector<std::string> dry;
  for (int n = 1; n <= 3; ++n) {
    auto script = out / ("dry-run-" + std::to_string(n) + ".sh");
    INFO(script.string());
    REQUIRE(std::filesystem::exists(script));
    CHECK(std::filesystem::exists(out / ("dry-run-" + std::to_string(n) + ".index")));
    dry.push_back(read_file(script));
  }
  CHECK_FALSE(std::filesystem::exists(out / "dry-run-4.sh"));
  REQUIRE(wrote->size() == 6);
  CHECK_THAT((*wrote)[0], Catch::Contains("3 tasks, --array=0-2"));
  CHECK_THAT((*wrote)[4], Catch::Contains("2 tasks, --array=0-1, 2 ranks each"));

  // The same jobs submitted: each array sbatch gets has the dry run's directives.
  std::vector<std::string> ids;
  for (const auto& j : jobs) ids.push_back(*f.backend->submit(j));
  for (std::size_t n = 1; n <= 3; ++n) {
    REQUIRE(run_until(f.io, [&] { return f.submits() >= n; }, 5));
    f.ctl->set_all(JobState::completed);  // drained: the throttle lets the next array out
  }
  REQUIRE(f.submits() == 3);
  for (std::size_t n = 0; n < 3; ++n) {
    INFO("array " << n + 1);
    CHECK(directives(f.ctl->submits[n].script) == directives(dry[n]));
  }
}

TEST_CASE("fake slurm: a dry run refuses a job submit would refuse", "[slurm][backend][dry-run]") {
  Fixture f;
  JobSpec bad = f.job(0);
  bad.ranks = 0;
  auto wrote = f.backend->dry_run({bad}, f.dir.path());
  REQUIRE_FALSE(wrote.has_value());
  CHECK_THAT(wrote.error().message(), Catch::Contains("ranks = 0"));
}

TEST_CASE("fake slurm: an offline cancel goes through the driver once, and a silent controller is an error",
          "[slurm][backend][cancel]") {
  Fixture f;
  REQUIRE(f.backend->cancel_detached({}).has_value());
  CHECK(f.ctl->cancels.empty());
  REQUIRE(f.backend->cancel_detached({"100_1", "100_0", "100_1"}).has_value());
  REQUIRE(f.ctl->cancels.size() == 1);
  CHECK(f.ctl->cancels[0] == std::vector<std::string>{"100_0", "100_1"});
  f.ctl->down = true;
  auto st = f.backend->cancel_detached({"101"});
  REQUIRE_FALSE(st.has_value());
  CHECK_THAT(st.error().message(), Catch::Contains("cancelling Slurm jobs 101 failed"));
  CHECK_THAT(st.error().message(), Catch::Contains("scontrol ping"));
}

TEST_CASE("fake slurm: a job over its timeout is cancelled by the backend with the reason",
          "[slurm][backend][timeout]") {
  // Slurm's --time is whole minutes (0.3 s -> 1 min): the backend keeps the timeout itself.
  Fixture f;
  JobSpec spec = f.job(1);
  spec.timeout_s = 0.3;
  auto id = f.backend->submit(spec);
  REQUIRE(id.has_value());
  REQUIRE(run_until(f.io, [&] { return f.queued({*id}); }, 5));
  CHECK(f.ctl->submits[0].time_limit_min == 1);
  const auto before_start = std::chrono::steady_clock::now();  // the timeout runs from `started`, later
  f.ctl->set(100, -1, JobState::running);
  REQUIRE(run_until(f.io, [&] { return f.rec.has(*id, K::started); }, 5));
  REQUIRE(run_until(f.io, [&] { return !f.ctl->cancels.empty(); }, 5));
  CHECK(std::chrono::steady_clock::now() - before_start >= std::chrono::milliseconds(300));
  CHECK(f.ctl->cancels[0] == std::vector<std::string>{"100"});
  f.ctl->set(100, -1, JobState::cancelled, 15);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*id) != nullptr; }, 5));
  CHECK(f.rec.terminal(*id)->kind == K::cancelled);
  CHECK(f.rec.terminal(*id)->message == "timed out after 0.3 s");
  CHECK(f.rec.terminal_count(*id) == 1);
}
