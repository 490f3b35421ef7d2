// FakeBackend specifics (the shared contract is in backend_conformance_test.cpp): scripted
// queue delays, metrics lines spread over the run, control.json stop, lost and signalled
// outcomes.
#include <catch2/catch.hpp>

#include <memory>

#include "common/protocol.hpp"
#include "tests/support/fake_backend.hpp"
#include "sched_test_support.hpp"

using namespace dlsweep::sched;
using namespace sched_test;
using K = JobEventKind;

namespace {

JobSpec fake_job(const std::filesystem::path& workdir, std::int64_t trial) {
  JobSpec s;
  s.study = "fake";
  s.trial_id = trial;
  s.argv = {"dlsweep-train"};
  s.workdir = workdir;
  return s;
}

std::size_t line_count(const std::filesystem::path& p) {
  auto s = read_file(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("fake: metrics lines are written spread over the run, then the job exits", "[sched][fake]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  FakeBackend b(io, 1, [](const JobSpec&) {
    FakeOutcome o;
    o.run_s = 0.3;
    o.metrics_lines = {R"({"seq":0})", R"({"seq":1})", R"({"seq":2})"};
    return o;
  });
  b.set_event_handler(rec.handler());
  const auto t0 = std::chrono::steady_clock::now();
  auto id = b.submit(fake_job(dir.path() / "t1", 1));
  REQUIRE(id);
  const auto metrics = dir.path() / "t1" / dlsweep::protocol::kMetricsFile;
  REQUIRE(run_until(io, [&] { return line_count(metrics) >= 1; }));
  CHECK(since(t0) >= 0.09);
  CHECK(rec.terminal(*id) == nullptr);
  CHECK(line_count(metrics) == 1);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  CHECK(since(t0) >= 0.29);
  CHECK(read_file(metrics) == "{\"seq\":0}\n{\"seq\":1}\n{\"seq\":2}\n");
  CHECK(rec.terminal(*id)->kind == K::exited);
  REQUIRE(b.submitted().size() == 1);
  CHECK(b.submitted()[0].trial_id == 1);
}

TEST_CASE("fake: queue_s delays the start; ready jobs start in the order they became ready",
          "[sched][fake]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  FakeBackend b(io, 1, [](const JobSpec& s) {
    FakeOutcome o;
    o.queue_s = s.trial_id == 1 ? 0.2 : 0.0;
    o.run_s = 0.05;
    return o;
  });
  b.set_event_handler(rec.handler());
  const auto t0 = std::chrono::steady_clock::now();
  auto slow = b.submit(fake_job(dir.path(), 1));
  auto fast = b.submit(fake_job(dir.path(), 2));
  REQUIRE(slow);
  REQUIRE(fast);
  REQUIRE(run_until(io, [&] { return rec.was_started(*slow); }));
  CHECK(since(t0) >= 0.19);
  REQUIRE(run_until(io, [&] { return rec.terminal(*slow) && rec.terminal(*fast); }));
  std::vector<std::string> order;
  for (auto& e : rec.events)
    if (e.kind == K::started) order.push_back(e.job_id);
  CHECK(order == std::vector<std::string>{*fast, *slow});
  CHECK(rec.max_running == 1);
}

TEST_CASE("fake: a job obeys control.json stop with the protocol's exit code", "[sched][fake]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  FakeBackend b(io, 1, [](const JobSpec&) {
    FakeOutcome o;
    o.run_s = 0.5;
    o.metrics_lines = {"{}", "{}", "{}", "{}", "{}"};
    return o;
  });
  b.set_event_handler(rec.handler());
  auto id = b.submit(fake_job(dir.path(), 1));
  REQUIRE(id);
  const auto metrics = dir.path() / dlsweep::protocol::kMetricsFile;
  REQUIRE(run_until(io, [&] { return line_count(metrics) >= 1; }));
  { std::ofstream(dir.path() / dlsweep::protocol::kControlFile) << R"({"action":"stop","reason":"pruned"})"; }
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  CHECK(rec.terminal(*id)->kind == K::exited);
  CHECK(rec.terminal(*id)->exit_code == dlsweep::protocol::kExitStopped);
  CHECK(line_count(metrics) < 5);
}

TEST_CASE("fake: lost and signalled outcomes", "[sched][fake]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  FakeBackend b(io, 1, [](const JobSpec& s) {
    FakeOutcome o;
    o.lost = s.trial_id == 1;
    o.signal = s.trial_id == 2 ? 9 : 0;
    o.run_s = 0.01;
    return o;
  });
  b.set_event_handler(rec.handler());
  auto lost = b.submit(fake_job("", 1));
  auto killed = b.submit(fake_job("", 2));
  REQUIRE(lost);
  REQUIRE(killed);
  REQUIRE(run_until(io, [&] { return rec.terminal(*lost) && rec.terminal(*killed); }));
  CHECK(rec.kinds(*lost) == std::vector<K>{K::queued, K::lost});
  CHECK(rec.kinds(*killed) == std::vector<K>{K::queued, K::started, K::exited});
  CHECK(rec.terminal(*killed)->signal == 9);
  CHECK(rec.terminal(*killed)->exit_code == 137);
  CHECK(b.active() == 0);
  CHECK(b.running() == 0);
}

TEST_CASE("fake: cancelling a job still waiting out its queue time", "[sched][fake]") {
  boost::asio::io_context io;
  Recorder rec;
  FakeBackend b(io, 4, [](const JobSpec&) {
    FakeOutcome o;
    o.queue_s = 5;
    return o;
  });
  b.set_event_handler(rec.handler());
  auto id = b.submit(fake_job("", 1));
  REQUIRE(id);
  b.cancel(*id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }, 1));
  CHECK(rec.kinds(*id) == std::vector<K>{K::queued, K::cancelled});
  io.restart();
  io.run_for(std::chrono::milliseconds(200));  // the queue timer must not keep io busy or fire
  CHECK(io.stopped());
  CHECK(rec.events.size() == 2);
}
