// The engine against a database that fails on demand (storage_fault.hpp): a failed write
// stops the sweep with the error, and nothing is left live that would keep it from ending.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine_fixture.hpp"
#include "tests/support/fake_backend.hpp"
#include "storage_fault.hpp"

TEST_CASE("engine: when the launch cannot be recorded, the job is cancelled and the sweep ends with the error") {
  Fixture f("launchfault", "");
  auto fault = StorageFault::on_transition_to(f.dir / "t.db", "QUEUED");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 600;  // would outlive the test: only a cancel ends it
    return o;
  });
  // Bounds a hang only (the bug this guards against: the trial stayed live with no job id
  // and the sweep never ended); never reached when the engine is right. A thread, so that
  // it does not keep the engine's event loop alive itself.
  std::mutex m;
  std::condition_variable cv;
  bool finished = false, hung = false;
  std::thread guard([&] {
    std::unique_lock lock(m);
    if (!cv.wait_for(lock, std::chrono::seconds(120), [&] { return finished; })) {
      hung = true;
      io.stop();
    }
  });
  auto out = f.run(backend, io);
  {
    std::lock_guard lock(m);
    finished = true;
  }
  cv.notify_one();
  guard.join();
  CHECK_FALSE(hung);
  REQUIRE_FALSE(out.has_value());
  CHECK_THAT(out.error().message(), Catch::Contains("injected fault"));
  // The jobs submitted before the failure (a trial is QUEUED when its job is accepted, so
  // both of the first turn's jobs went out) were cancelled, not left running.
  auto trials = f.storage->list_trials(f.study_id);
  REQUIRE(trials.has_value());
  CHECK(backend.submitted().size() == trials->size());
  CHECK(backend.active() == 0);
  // The trials' params are durable; they never ran, and end CANCELLED like every unfinished
  // trial of a stopped sweep (`resume --rerun cancelled` runs them).
  REQUIRE(trials->size() >= 1);
  for (const auto& t : *trials) {
    CHECK(t.state == TrialState::cancelled);
    CHECK(fs::exists(fs::path(t.trial_dir) / "params.json"));
  }
  CHECK((*f.storage->find_study("launchfault"))->state == "STOPPED");
}
