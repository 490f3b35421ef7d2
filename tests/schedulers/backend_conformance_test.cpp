// One conformance suite run over every Backend implementation: the contract of
// schedulers/backend.hpp (event order, exit codes, cancel, timeout, concurrency bound, exactly
// one terminal event). A job's behaviour is given by FAKE_RUN_S / FAKE_EXIT in its env: the
// local backend's /bin/sh reads them, the fake backend's script does too, and so does the
// simulated Slurm controller under SlurmBackend (from the batch's index file).
#include <catch2/catch.hpp>

#include <signal.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/fake_backend.hpp"
#include "schedulers/local/backend.hpp"
#include "sched_test_support.hpp"
#include "slurm/simulated_slurm_driver.hpp"

using namespace dlsweep::sched;
using namespace sched_test;
using K = JobEventKind;

namespace {

struct LocalKind {
  using Backend = LocalBackend;
  static std::unique_ptr<LocalBackend> make(boost::asio::io_context& io, std::size_t max, const std::filesystem::path&) {
    LocalOptions o;
    o.cancel_grace_s = 1.0;
    return std::make_unique<LocalBackend>(io, max, o);
  }
};

struct FakeKind {
  using Backend = FakeBackend;
  static std::unique_ptr<FakeBackend> make(boost::asio::io_context& io, std::size_t max, const std::filesystem::path&) {
    return std::make_unique<FakeBackend>(io, max, [](const JobSpec& s) {
      FakeOutcome o;
      o.run_s = std::stod(s.env.at("FAKE_RUN_S"));
      o.exit_code = std::stoi(s.env.at("FAKE_EXIT"));
      return o;
    });
  }
};

// SlurmBackend on a controller that runs its jobs by itself (slurm/simulated_slurm_driver.hpp),
// polled fast.
struct SlurmKind {
  using Backend = SlurmBackend;
  static std::unique_ptr<SlurmBackend> make(boost::asio::io_context& io, std::size_t max,
                                            const std::filesystem::path& dir) {
    SlurmOptions o;
    o.script_dir = dir / "slurm";
    o.max_concurrent = max;
    o.poll_min_s = 0.02;
    o.poll_max_s = 0.08;
    auto b = SlurmBackend::create(io, o,
                                  std::make_unique<slurm_test::SimulatedDriver>(std::make_shared<slurm_test::FakeController>()));
    REQUIRE(b.has_value());
    (*b)->set_log_handler([](const std::string& m) { FAIL("slurm backend logged: " << m); });
    return std::move(*b);
  }
};

JobSpec job(const std::filesystem::path& root, std::int64_t trial, double run_s, int exit_code) {
  JobSpec s;
  s.study = "conf";
  s.trial_id = trial;
  s.attempt = 1;
  s.argv = {"/bin/sh", "-c", "sleep \"$FAKE_RUN_S\"; exit \"$FAKE_EXIT\""};
  s.workdir = root / ("t" + std::to_string(trial));
  s.env = {{"FAKE_RUN_S", std::to_string(run_s)}, {"FAKE_EXIT", std::to_string(exit_code)}};
  return s;
}

}  // namespace

TEMPLATE_TEST_CASE("backend: a successful job goes queued, started, exited 0", "[sched][conformance]", LocalKind,
                   FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 2, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  auto id = b->submit(job(dir.path(), 7, 0.05, 0));
  REQUIRE(id.has_value());
  CHECK(b->active() == 1);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id) != nullptr; }));
  CHECK(rec.kinds(*id) == std::vector<K>{K::queued, K::started, K::exited});
  const JobEvent* t = rec.terminal(*id);
  CHECK(t->exit_code == 0);
  CHECK(t->signal == 0);
  CHECK(t->trial_id == 7);
  CHECK(t->attempt == 1);
  CHECK(b->active() == 0);
  CHECK(b->max_concurrent() == 2);
}

TEMPLATE_TEST_CASE("backend: a failing job's exit code is propagated", "[sched][conformance]", LocalKind,
                   FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 1, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  auto id = b->submit(job(dir.path(), 1, 0.0, 3));
  REQUIRE(id.has_value());
  REQUIRE(run_until(io, [&] { return rec.terminal(*id) != nullptr; }));
  CHECK(rec.terminal(*id)->kind == K::exited);
  CHECK(rec.terminal(*id)->exit_code == 3);
  CHECK(rec.terminal(*id)->signal == 0);
}

TEMPLATE_TEST_CASE("backend: cancelling a running job ends it with `cancelled`", "[sched][conformance]", LocalKind,
                   FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 2, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  auto id = b->submit(job(dir.path(), 1, 30, 0));
  REQUIRE(id.has_value());
  REQUIRE(run_until(io, [&] { return rec.was_started(*id); }));
  pid_t pid = -1;
  if constexpr (std::is_same_v<TestType, LocalKind>) pid = b->pid_of(*id).value_or(-1);
  const auto t0 = std::chrono::steady_clock::now();
  b->cancel(*id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id) != nullptr; }));
  // Ended by the cancel, not by running its 30 s out (a bound about meaning, not speed: it
  // holds on a loaded 2-core machine).
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(25));
  CHECK(rec.kinds(*id) == std::vector<K>{K::queued, K::started, K::cancelled});
  CHECK(b->active() == 0);
  if constexpr (std::is_same_v<TestType, LocalKind>) {
    REQUIRE(pid > 0);
    CHECK(kill(pid, 0) == -1);  // reaped: the pid no longer exists
    CHECK(errno == ESRCH);
    CHECK_FALSE(b->pid_of(*id).has_value());
  }
}

TEMPLATE_TEST_CASE("backend: cancelling an unknown or finished job is a no-op", "[sched][conformance]", LocalKind,
                   FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 2, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  b->cancel("no-such-job");
  auto id = b->submit(job(dir.path(), 1, 0.0, 0));
  REQUIRE(id.has_value());
  REQUIRE(run_until(io, [&] { return rec.terminal(*id) != nullptr; }));
  b->cancel(*id);
  b->cancel(*id);
  run_for(io, 0.1);
  CHECK(rec.events.size() == 3);
  CHECK(rec.terminal_count(*id) == 1);
  CHECK(rec.terminal(*id)->kind == K::exited);
}

TEMPLATE_TEST_CASE("backend: cancelling a queued job never starts it", "[sched][conformance]", LocalKind,
                   FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 1, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  auto first = b->submit(job(dir.path(), 1, 30, 0));  // holds the only slot until cancelled
  auto second = b->submit(job(dir.path(), 2, 0.0, 0));
  auto third = b->submit(job(dir.path(), 3, 0.0, 0));
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  REQUIRE(third.has_value());
  CHECK(*first != *second);
  CHECK(b->active() == 3);
  b->cancel(*third);  // in the turn that submitted it
  auto queued = [&](const std::string& id) {
    auto k = rec.kinds(id);
    return std::find(k.begin(), k.end(), K::queued) != k.end();
  };
  REQUIRE(run_until(io, [&] { return rec.was_started(*first) && queued(*second); }));
  b->cancel(*second);  // queued behind the running one
  REQUIRE(run_until(io, [&] { return rec.terminal(*second) && rec.terminal(*third); }));
  CHECK(rec.kinds(*second) == std::vector<K>{K::queued, K::cancelled});
  // Cancelled before the backend handed it on: local and fake said `queued` at submit; Slurm,
  // whose `queued` means "accepted by the controller", never sent it to the controller.
  const auto third_kinds = rec.kinds(*third);
  CHECK(third_kinds.back() == K::cancelled);
  CHECK(std::count(third_kinds.begin(), third_kinds.end(), K::started) == 0);
  CHECK(rec.terminal_count(*third) == 1);
  CHECK_FALSE(rec.was_started(*second));
  b->cancel(*first);
  REQUIRE(run_until(io, [&] { return rec.terminal(*first) != nullptr; }));
  CHECK(rec.terminal(*first)->kind == K::cancelled);
  CHECK(b->active() == 0);
}

TEMPLATE_TEST_CASE("backend: events are posted, never delivered from inside submit() or cancel()",
                   "[sched][conformance]", LocalKind, FakeKind, SlurmKind) {
  // The engine walks its live trials while it cancels them: an event handled before cancel()
  // returns ends a trial under its feet (the pilot pool did this for the tasks in its queue).
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 1, dir.path());
  Recorder rec;
  bool inside = false;
  std::vector<std::string> during;  // "KIND job" of each event delivered inside a call
  b->set_event_handler([&, record = rec.handler()](const JobEvent& ev) {
    if (inside) during.push_back(std::string(to_string(ev.kind)) + " " + ev.job_id);
    record(ev);
  });
  auto call = [&](const std::function<void()>& fn) {
    inside = true;
    fn();
    inside = false;
  };
  dlsweep::Result<std::string> first = std::unexpected(dlsweep::Error{"", "", ""}), second = first, third = first;
  call([&] { first = b->submit(job(dir.path(), 1, 30, 0)); });  // holds the only slot until cancelled
  call([&] { second = b->submit(job(dir.path(), 2, 0.0, 0)); });
  call([&] { third = b->submit(job(dir.path(), 3, 0.0, 0)); });
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  REQUIRE(third.has_value());
  call([&] { b->cancel(*third); });  // still in the backend (the turn that submitted it)
  auto queued = [&](const std::string& id) {
    auto k = rec.kinds(id);
    return std::find(k.begin(), k.end(), K::queued) != k.end();
  };
  REQUIRE(run_until(io, [&] { return rec.was_started(*first) && queued(*second) && rec.terminal(*third); }));
  call([&] { b->cancel(*second); });  // queued behind the running one
  call([&] { b->cancel(*first); });   // running
  REQUIRE(run_until(io, [&] { return rec.terminal(*first) && rec.terminal(*second); }));
  call([&] { b->cancel(*first); });  // over: a no-op
  run_for(io, 0.1);
  CHECK(during == std::vector<std::string>{});
  for (const auto& id : {*first, *second, *third}) CHECK(rec.terminal_count(id) == 1);
  CHECK(b->active() == 0);
}

TEMPLATE_TEST_CASE("backend: never more than max_concurrent jobs run; each ends exactly once",
                   "[sched][conformance]", LocalKind, FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 2, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    auto id = b->submit(job(dir.path(), i, 0.15, i % 2));
    REQUIRE(id.has_value());
    ids.push_back(*id);
  }
  CHECK(std::set<std::string>(ids.begin(), ids.end()).size() == 6);
  CHECK(b->active() == 6);
  auto all_done = [&] {
    for (auto& id : ids)
      if (!rec.terminal(id)) return false;
    return true;
  };
  REQUIRE(run_until(io, all_done, 20));
  run_for(io, 0.1);  // nothing more may arrive
  CHECK(rec.max_running == 2);
  std::vector<std::string> start_order;
  for (auto& e : rec.events)
    if (e.kind == K::started) start_order.push_back(e.job_id);
  CHECK(start_order == ids);  // FIFO
  for (std::size_t i = 0; i < ids.size(); ++i) {
    CHECK(rec.kinds(ids[i]) == std::vector<K>{K::queued, K::started, K::exited});
    CHECK(rec.terminal_count(ids[i]) == 1);
    CHECK(rec.terminal(ids[i])->exit_code == static_cast<int>(i % 2));
  }
  CHECK(b->active() == 0);
}

TEMPLATE_TEST_CASE("backend: io_context::run() returns once every job has ended", "[sched][conformance]",
                   LocalKind, FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 2, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(b->submit(job(dir.path(), i, 0.1, 0)).value());
  const auto t0 = std::chrono::steady_clock::now();
  io.run_for(std::chrono::seconds(30));  // returns early only if the backend holds no work
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(25));
  for (auto& id : ids) CHECK(rec.terminal_count(id) == 1);
  CHECK(b->active() == 0);
}

TEMPLATE_TEST_CASE("backend: a job over its timeout is cancelled with the reason", "[sched][conformance]",
                   LocalKind, FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 1, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  JobSpec s = job(dir.path(), 1, 30, 0);
  s.timeout_s = 0.3;
  auto id = b->submit(s);
  REQUIRE(id.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(run_until(io, [&] { return rec.terminal(*id) != nullptr; }));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= 0.29);
  CHECK(took < 5);
  CHECK(rec.terminal(*id)->kind == K::cancelled);
  CHECK_THAT(rec.terminal(*id)->message, Catch::Contains("timed out after 0.3 s"));
}

TEMPLATE_TEST_CASE("backend: an empty command line is refused at submit", "[sched][conformance]", LocalKind,
                   FakeKind, SlurmKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 1, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  JobSpec s = job(dir.path(), 1, 0, 0);
  s.argv.clear();
  auto id = b->submit(s);
  REQUIRE_FALSE(id.has_value());
  CHECK_THAT(id.error().message(), Catch::Contains("conf/1/1"));
  run_for(io, 0.05);
  CHECK(rec.events.empty());
  CHECK(b->active() == 0);
}

TEST_CASE("JobSpec token and event kind names", "[sched]") {
  JobSpec s;
  s.study = "lb";
  s.trial_id = 12;
  s.attempt = 2;
  CHECK(s.token() == "lb/12/2");
  CHECK(to_string(K::queued) == "queued");
  CHECK(to_string(K::started) == "started");
  CHECK(to_string(K::exited) == "exited");
  CHECK(to_string(K::cancelled) == "cancelled");
  CHECK(to_string(K::lost) == "lost");
}

TEMPLATE_TEST_CASE("backend: a dry run writes each job's command line and runs nothing", "[sched][conformance][dry-run]",
                   LocalKind, FakeKind) {
  TempDir dir;
  boost::asio::io_context io;
  auto b = TestType::make(io, 2, dir.path());
  Recorder rec;
  b->set_event_handler(rec.handler());
  std::vector<JobSpec> jobs{job(dir.path(), 1, 0, 0), job(dir.path(), 2, 0, 0)};
  jobs[1].env["WITH SPACE"] = "it's";
  auto wrote = b->dry_run(jobs, dir.path());
  REQUIRE(wrote.has_value());
  REQUIRE(wrote->size() == 1);
  CHECK_THAT(wrote->front(), Catch::Contains("commands.sh"));
  io.restart();
  io.poll();
  CHECK(rec.events.empty());
  CHECK(b->active() == 0);
  CHECK_FALSE(std::filesystem::exists(jobs[0].workdir));
  // Each line runs its job by hand: here, through sh, with the environment as given.
  std::string text;
  {
    std::ifstream in(dir.path() / "commands.sh");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  CHECK_THAT(text, Catch::Contains("&& env FAKE_EXIT=0 FAKE_RUN_S="));
  CHECK_THAT(text, Catch::Contains("'WITH SPACE=it'\\''s'"));
  JobSpec empty = jobs[0];
  empty.argv.clear();
  CHECK_FALSE(b->dry_run({empty}, dir.path()).has_value());
}
