// A signal ends the orchestrator within 5 s whatever the backend still has pending (issue
// "Nothing lost on a real cluster", item 5): on a site that refuses every submission, SIGTERM
// cancelled every trial at once and then the process sat 116 s in its event loop, on the
// Slurm backend's site-limit probe (120 s after the last refusal). Under --as-job Slurm's
// KillWait (30 s) would have SIGKILLed it. The engine runs on its own thread here, on the
// Slurm backend over an in-memory controller that refuses every sbatch for a submit limit;
// the signal reaches it through Engine::on_signal, what its signal_set calls (a real signal
// would mark this whole test process as stopping: common/stop_signal.hpp).
#include <csignal>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "../schedulers/slurm/fake_slurm_driver.hpp"
#include "common/site_limit_note.hpp"
#include "engine_fixture.hpp"
#include "tests/support/wait_until.hpp"

using namespace engine_test;
using namespace std::chrono_literals;

namespace {

/// Runs `fn` on the io_context's thread and waits (at most 10 s) for its answer: what the
/// engine's loop knows. False when the loop did not answer.
bool on_loop(boost::asio::io_context& io, std::function<bool()> fn) {
  auto done = std::make_shared<std::promise<bool>>();
  auto answer = done->get_future();
  boost::asio::post(io, [done, fn = std::move(fn)] { done->set_value(fn()); });
  return answer.wait_for(10s) == std::future_status::ready && answer.get();
}

/// The Slurm backend over an in-memory controller that refuses every sbatch for a submit
/// limit (QOSMaxSubmitJobPerUserLimit): the site's refusal is learned and the probe's timer
/// is armed two minutes on.
Result<std::unique_ptr<sched::SlurmBackend>> refusing_backend(boost::asio::io_context& io, const Fixture& f,
                                                              const std::shared_ptr<slurm_test::FakeController>& ctl) {
  ctl->submit_limit = 0;
  sched::SlurmOptions o;
  o.script_dir = f.dir / "slurm";
  o.max_concurrent = 2;
  o.poll_min_s = 0.02;
  o.poll_max_s = 0.08;
  auto backend = sched::SlurmBackend::create(io, o, std::make_unique<slurm_test::FakeDriver>(ctl));
  if (backend) (*backend)->set_log_handler([](const std::string&) {});
  return backend;
}

/// Waits until the backend has learned the site's limit (nothing can go out), the engine has
/// recorded it (its site_limit event: the engine looks at the backend's note on its ticks),
/// and the flush posted with the last refusal has run. The database is read on the engine's
/// own thread.
bool limit_learned(boost::asio::io_context& io, const std::atomic<orch::Engine*>& engine,
                   slurm_test::FakeController& ctl, sched::SlurmBackend& backend, const Fixture& f) {
  return test_support::wait_until([&] {
    {
      std::lock_guard l(ctl.m);
      if (engine.load() == nullptr || ctl.refusals == 0) return false;
    }
    return on_loop(io, [&] {
      if (backend.capacity_note().empty()) return false;
      auto ev = f.storage->latest_event(f.study_id, kSiteLimitEventKind);
      return ev.has_value() && ev->has_value();
    });
  }, 30s) && on_loop(io, [] { return true; });
}

}  // namespace

TEST_CASE("engine: SIGTERM on a site that refuses every submission ends the sweep within 5 s", "[signal]") {
  for (int sig : {SIGTERM, SIGINT}) {
    DYNAMIC_SECTION((sig == SIGTERM ? "SIGTERM" : "SIGINT")) {
      Fixture f(sig == SIGTERM ? "sigterm-refused" : "sigint-refused", "  fail_fast: 0");
      boost::asio::io_context io;
      auto ctl = std::make_shared<slurm_test::FakeController>();
      auto backend = refusing_backend(io, f, ctl);
      REQUIRE(backend.has_value());

      std::atomic<orch::Engine*> engine{nullptr};
      std::atomic<bool> returned{false};
      Result<orch::SweepOutcome> out = std::unexpected(Error{"never ran", "", ""});
      std::thread loop([&] {
        out = f.run(**backend, io, [&](orch::Engine& e) { engine = &e; });
        returned = true;
      });
      // The site's refusals are learned: nothing can go out, and the backend waits for its
      // probe (two minutes on).
      REQUIRE(limit_learned(io, engine, *ctl, **backend, f));
      const auto signalled = std::chrono::steady_clock::now();
      boost::asio::post(io, [&, sig] { engine.load()->on_signal(sig); });
      const bool in_time = test_support::wait_until([&] { return returned.load(); }, 5s);
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
      if (!in_time) io.stop();  // the old behaviour: run() would return with the probe, minutes on
      loop.join();
      INFO("run() returned " << took << " s after the signal");
      CHECK(in_time);
      REQUIRE(out.has_value());
      CHECK(out->interrupted);
      CHECK(out->snapshot.cancelled == 5);
      auto rows = f.storage->list_trials(f.study_id);
      REQUIRE(rows.has_value());
      for (const auto& t : *rows) CHECK(t.state == TrialState::cancelled);
      CHECK((*f.storage->find_study(f.spec.name))->state == "STOPPED");
      // The limit is recorded with where the jobs wait, as prose names it: status and serve
      // say "0 in Slurm, 5 waiting" from the event alone.
      auto limit = f.storage->latest_event(f.study_id, kSiteLimitEventKind);
      REQUIRE(limit.has_value());
      REQUIRE(limit->has_value());
      CHECK((*limit)->who == "backend:Slurm");
      CHECK_THAT(site_limit_line((*limit)->reason, 0, 5, (*limit)->who), Catch::EndsWith(": 0 in Slurm, 5 waiting"));
      std::lock_guard l(ctl->m);
      CHECK(ctl->submits.empty());  // nothing ever went out
    }
  }
}

TEST_CASE("engine: detaching on SIGTERM says which trials have no job yet (held back by the site's limit)",
          "[signal][detach]") {
  Fixture f("detach-refused", "  fail_fast: 0");
  f.detach_on_sigterm = true;  // what `submit --as-job` runs with
  boost::asio::io_context io;
  auto ctl = std::make_shared<slurm_test::FakeController>();
  auto backend = refusing_backend(io, f, ctl);
  REQUIRE(backend.has_value());
  const fs::path log = f.dir / "progress.log";
  std::FILE* out = std::fopen(log.c_str(), "w");
  REQUIRE(out != nullptr);
  std::atomic<orch::Engine*> engine{nullptr};
  std::atomic<bool> returned{false};
  Result<orch::SweepOutcome> result = std::unexpected(Error{"never ran", "", ""});
  std::thread loop([&] {
    result = f.run(**backend, io, [&](orch::Engine& e) { engine = &e; }, out);
    returned = true;
  });
  REQUIRE(limit_learned(io, engine, *ctl, **backend, f));
  boost::asio::post(io, [&] { engine.load()->on_signal(SIGTERM); });
  const bool in_time = test_support::wait_until([&] { return returned.load(); }, 5s);
  if (!in_time) io.stop();
  loop.join();
  std::fclose(out);
  CHECK(in_time);
  REQUIRE(result.has_value());
  CHECK(result->detached);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(text);
  // Not "5 live trials keep running on slurm": none has a job.
  CHECK_THAT(text, Catch::Contains("SIGTERM: detaching; no trial has a job on Slurm: 5 not yet submitted (held back "
                                   "for a limit) stay WAITING — `dlsweep resume detach-refused` submits them"));
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  for (const auto& t : *rows) CHECK(t.state == TrialState::waiting);
}
