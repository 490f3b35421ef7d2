// SlurmBackend's logic against an in-memory controller (FakeDriver): batching into arrays,
// one query per poll with back-off, a controller that is down, an ambiguous submission,
// vanished jobs, cancel batching, refused submissions. Fast and deterministic; the same
// behaviours are checked against a real controller in slurm_cluster_test.cpp.
#include <catch2/catch.hpp>

#include <mutex>

#include "schedulers/slurm_backend.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
using namespace slurm_test;
using K = JobEventKind;

namespace {

/// The controller's side, shared between the test and the driver (worker thread).
struct FakeController {
  std::mutex m;
  bool down = false;               ///< every call fails as "Unable to contact slurm controller"
  bool accept_then_timeout = false;  ///< next submit is accepted but reported as a timeout
  std::string refuse;              ///< non-empty: submit fails permanently with this
  std::uint32_t next_id = 100;
  int max_array = 1001;
  std::vector<JobRecord> table;
  std::vector<SubmitRequest> submits;
  std::vector<std::vector<std::string>> cancels;
  std::vector<std::chrono::steady_clock::time_point> query_times;
  int list_calls = 0;

  /// Sets the state of array task (job, task) (or plain job when task < 0).
  void set(std::uint32_t job, int task, JobState st, int wait_status = 0) {
    std::lock_guard l(m);
    for (auto& r : table) {
      bool match = task < 0 ? (r.array_job_id == 0 && r.job_id == job)
                            : (r.array_job_id == job && r.array_task_id == static_cast<std::uint32_t>(task));
      if (match) {
        r.state = st;
        r.state_name = std::string(to_string(st));
        r.wait_status = wait_status;
      }
    }
  }
  void set_all(JobState st) {
    std::lock_guard l(m);
    for (auto& r : table) {
      r.state = st;
      r.state_name = std::string(to_string(st));
    }
  }
  void erase(std::uint32_t job, int task) {
    std::lock_guard l(m);
    std::erase_if(table, [&](const JobRecord& r) {
      return task < 0 ? r.job_id == job : (r.array_job_id == job && r.array_task_id == static_cast<std::uint32_t>(task));
    });
  }
};

DriverError unreachable() {
  return DriverError{dlsweep::Error{"Unable to contact slurm controller (connect failure)", "fake", ""}, true};
}

class FakeDriver final : public Driver {
 public:
  explicit FakeDriver(std::shared_ptr<FakeController> c) : c_(std::move(c)) {}
  std::string_view name() const override { return "fake"; }
  DriverResult<std::uint32_t> submit(const SubmitRequest& req) override {
    std::lock_guard l(c_->m);
    if (c_->down) return std::unexpected(unreachable());
    if (!c_->refuse.empty()) return std::unexpected(DriverError{dlsweep::Error{c_->refuse, "sbatch", ""}, false});
    c_->submits.push_back(req);
    const std::uint32_t id = c_->next_id++;
    std::size_t n = 1;
    if (!req.array.empty()) n = std::stoul(req.array.substr(2)) + 1;  // "0-N[%T]"
    for (std::size_t i = 0; i < n; ++i) {
      JobRecord r;
      r.job_id = id * 1000 + static_cast<std::uint32_t>(i);
      if (!req.array.empty()) {
        r.array_job_id = id;
        r.array_task_id = static_cast<std::uint32_t>(i);
      } else {
        r.job_id = id;
      }
      r.state = JobState::pending;
      r.state_name = "PENDING";
      r.name = req.job_name;
      r.comment = req.comment;
      c_->table.push_back(r);
    }
    if (c_->accept_then_timeout) {
      c_->accept_then_timeout = false;
      return std::unexpected(DriverError{dlsweep::Error{"no answer within 60 s", "sbatch", "", dlsweep::ErrorKind::timeout}, true});
    }
    return id;
  }
  DriverResult<std::vector<JobRecord>> query(const std::vector<std::uint32_t>&) override {
    std::lock_guard l(c_->m);
    c_->query_times.push_back(std::chrono::steady_clock::now());
    if (c_->down) return std::unexpected(unreachable());
    return c_->table;
  }
  DriverResult<std::vector<JobRecord>> list_jobs() override {
    std::lock_guard l(c_->m);
    c_->list_calls++;
    if (c_->down) return std::unexpected(unreachable());
    return c_->table;
  }
  DriverResult<std::vector<JobRecord>> accounting(const std::vector<std::string>&) override {
    return std::vector<JobRecord>{};
  }
  DriverResult<void> cancel(const std::vector<std::string>& ids) override {
    std::lock_guard l(c_->m);
    if (c_->down) return std::unexpected(unreachable());
    c_->cancels.push_back(ids);
    return {};
  }
  DriverResult<int> max_array_size() override {
    std::lock_guard l(c_->m);
    if (c_->down) return std::unexpected(unreachable());
    return c_->max_array;
  }
  void interrupt() override {}

 private:
  std::shared_ptr<FakeController> c_;
};

struct Fixture {
  TempDir dir;
  boost::asio::io_context io;
  std::shared_ptr<FakeController> ctl = std::make_shared<FakeController>();
  Recorder rec;
  std::vector<std::string> logs;
  std::unique_ptr<SlurmBackend> backend;

  explicit Fixture(std::size_t max_concurrent = 4, int vanish_polls = 2) {
    SlurmOptions o;
    o.script_dir = dir.path / "slurm";
    o.max_concurrent = max_concurrent;
    o.poll_min_s = 0.02;
    o.poll_max_s = 0.16;
    o.vanish_polls = vanish_polls;
    auto b = SlurmBackend::create(io, o, std::make_unique<FakeDriver>(ctl));
    REQUIRE(b.has_value());
    backend = std::move(*b);
    backend->set_event_handler(rec.handler());
    backend->set_log_handler([this](const std::string& m) { logs.push_back(m); });
  }
  JobSpec job(int trial) const {
    JobSpec s;
    s.study = "fake";
    s.trial_id = trial;
    s.attempt = 0;
    s.argv = {"/bin/true"};
    s.workdir = dir.path / ("t" + std::to_string(trial));
    return s;
  }
  std::vector<std::string> submit(int n, int first = 0) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      auto id = backend->submit(job(first + i));
      REQUIRE(id.has_value());
      ids.push_back(*id);
    }
    return ids;
  }
  std::size_t submits() {
    std::lock_guard l(ctl->m);
    return ctl->submits.size();
  }
  bool queued(const std::vector<std::string>& ids) {
    for (auto& id : ids)
      if (!rec.has(id, K::queued)) return false;
    return true;
  }
};

}  // namespace

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
