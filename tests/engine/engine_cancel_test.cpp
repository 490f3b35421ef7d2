// Every way the engine cancels live trials — a stopped sweep (stop_sweep), fail_fast,
// `dlsweep cancel` (some trials, all), an interrupt — against a backend that answers
// cancel() with `cancelled` from inside cancel() (sync_cancel_backend.hpp), as the pilot pool
// did for the tasks still in its queue: each walk over the live trials used to erase the
// entry it stood on and advance through a freed node (a crash, or garbage; the sanitizer
// variant of scripts/test-variants.sh, which fills freed memory, crashes in
// std::_Rb_tree_increment under stop_sweep, fail_fast and the cancel request). Each trial ends
// exactly once.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

#include "engine_fixture.hpp"
#include "engine/cancel_request.hpp"
#include "sync_cancel_backend.hpp"
#include "tests/support/fake_backend.hpp"

using namespace engine_test;

namespace {

/// Every trial's state in the database, by number.
std::map<std::int64_t, TrialState> states(Fixture& f) {
  std::map<std::int64_t, TrialState> out;
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  for (const auto& t : *rows) out[t.number] = t.state;
  return out;
}

/// How many transitions into CANCELLED each trial got, by number (each trial ends once).
std::map<std::int64_t, int> cancels(Fixture& f) {
  std::map<std::int64_t, std::int64_t> number_of;
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  std::map<std::int64_t, int> out;
  for (const auto& t : *rows) {
    number_of[t.id] = t.number;
    out[t.number] = 0;
  }
  auto events = f.storage->events(f.study_id);
  REQUIRE(events.has_value());
  for (const auto& e : *events)
    if (e.trial_id && e.to_state == "CANCELLED") out[number_of.at(*e.trial_id)]++;
  return out;
}

/// The trial number of a job (its trial directory is trial-NNNN).
int number_of(const sched::JobSpec& job) { return std::stoi(job.workdir.filename().string().substr(6)); }

}  // namespace

TEST_CASE("engine: a stopped sweep cancels its live trials, each answered from inside cancel()", "[cancel]") {
  // Trial 0 completes at once without reading the study's parameter x (its params_read.json
  // says so): the sweep stops (stop_sweep) while trials 1-4 run.
  Fixture f("sync-stop", "  fail_fast: 0");
  boost::asio::io_context io;
  SyncCancelBackend backend(io, 5, [&](const sched::JobSpec& job) {
    sched::FakeOutcome o;
    if (number_of(job) == 0) {
      std::ofstream(job.workdir / "params_read.json") << R"({"read": [], "defaulted": []})";
      o.run_s = 0.05;
      o.metrics_lines = {eval_line(0, 10, 0.6, true)};
    } else {
      o.run_s = 60;
    }
    return o;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK_THAT(out->failed_fast, Catch::Contains("never read the study parameter"));
  CHECK_FALSE(out->stop_fix.empty());
  CHECK(backend.sync_answers() == 4);
  CHECK(out->snapshot.complete == 1);
  CHECK(out->snapshot.cancelled == 4);
  for (const auto& [number, st] : states(f)) CHECK(st == (number == 0 ? TrialState::complete : TrialState::cancelled));
  for (const auto& [number, n] : cancels(f)) CHECK(n == (number == 0 ? 0 : 1));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));  // cancelled, not run out
}

TEST_CASE("engine: fail_fast cancels the live trials, each answered from inside cancel()", "[cancel]") {
  // Trials 0-2 fail the same way at once; 3 and 4 run: fail_fast (3) cancels them.
  Fixture f("sync-failfast", "  max_retries: 0");
  boost::asio::io_context io;
  SyncCancelBackend backend(io, 5, [&](const sched::JobSpec& job) {
    sched::FakeOutcome o;
    if (number_of(job) <= 2) {
      std::ofstream(job.workdir / "stderr.log") << "ModuleNotFoundError: No module named 'torchx'\n";
      o.run_s = 0.02;
      o.exit_code = 1;
    } else {
      o.run_s = 60;
    }
    return o;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK_THAT(out->failed_fast, Catch::Contains("3 trials failed the same way"));
  CHECK(backend.sync_answers() == 2);
  CHECK(out->snapshot.failed == 3);
  CHECK(out->snapshot.cancelled == 2);
  for (const auto& [number, st] : states(f)) CHECK(st == (number <= 2 ? TrialState::failed : TrialState::cancelled));
  for (const auto& [number, n] : cancels(f)) CHECK(n == (number <= 2 ? 0 : 1));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
}

TEST_CASE("engine: `dlsweep cancel` of some trials, then of all, each answered from inside cancel()", "[cancel]") {
  Fixture f("sync-cancelreq", "");
  boost::asio::io_context io;
  SyncCancelBackend backend(io, 5, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 60;
    return o;
  });
  const fs::path study_dir = f.dir / "runs" / "sync-cancelreq";
  boost::asio::steady_timer t(io);
  std::function<void()> step;
  int phase = 0;
  // Once all five run: cancel trials 1 and 3; once those two ended, the rest.
  step = [&] {
    const auto s = states(f);
    const bool all_live = s.size() == 5 && std::all_of(s.begin(), s.end(), [](const auto& p) {
                            return p.second == TrialState::queued || p.second == TrialState::running;
                          });
    if (phase == 0 && all_live) {
      std::ofstream(study_dir / orch::kCancelRequestFile) << orch::format_cancel_request({false, {1, 3}});
      phase = 1;
    } else if (phase == 1 && s.at(1) == TrialState::cancelled && s.at(3) == TrialState::cancelled) {
      std::ofstream(study_dir / orch::kCancelRequestFile) << orch::format_cancel_request({true, {}});
      phase = 2;
      return;
    }
    t.expires_after(std::chrono::milliseconds(10));
    t.async_wait([&](auto ec) { if (!ec) step(); });
  };
  auto out = f.run(backend, io, [&](orch::Engine&) { boost::asio::post(io, step); });
  REQUIRE(out.has_value());
  CHECK(phase == 2);
  CHECK(backend.sync_answers() == 5);
  CHECK(out->snapshot.cancelled == 5);
  for (const auto& [number, n] : cancels(f)) CHECK(n == 1);
}

TEST_CASE("engine: interrupt with every trial live, each cancel answered from inside cancel(): all end CANCELLED",
          "[cancel]") {
  Fixture f("sync-interrupt", "");
  boost::asio::io_context io;
  SyncCancelBackend backend(io, 5, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 60;
    return o;
  });
  boost::asio::steady_timer t(io);
  std::function<void(orch::Engine&)> when_all_live = [&](orch::Engine& e) {
    t.expires_after(std::chrono::milliseconds(10));
    t.async_wait([&](auto ec) {
      if (ec) return;
      if (backend.submitted().size() == 5) e.interrupt("test");
      else when_all_live(e);
    });
  };
  auto out = f.run(backend, io, when_all_live);
  REQUIRE(out.has_value());
  CHECK(out->interrupted);
  CHECK(backend.sync_answers() == 5);
  CHECK(out->snapshot.cancelled == 5);
  for (const auto& [number, st] : states(f)) CHECK(st == TrialState::cancelled);
  for (const auto& [number, n] : cancels(f)) CHECK(n == 1);
}
