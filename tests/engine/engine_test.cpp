// The sweep engine against the timer-driven fake backend and a real SQLite file: the
// orchestration logic (write-ahead, state machine, retries, concurrency, ingestion,
// interrupt) without processes.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "engine_fixture.hpp"
#include "common/search_choice.hpp"
#include "search/auto_sampler.hpp"
#include "tests/support/fake_backend.hpp"

TEST_CASE("engine: every grid point runs once, metrics reach the database, concurrency holds") {
  Fixture f("ok", "");
  boost::asio::io_context io;
  std::size_t max_running = 0;
  sched::FakeBackend* bp = nullptr;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    max_running = std::max(max_running, bp->running() + 1);
    // params.json exists before the job is submitted (write-ahead).
    CHECK(fs::exists(job.workdir / "params.json"));
    sched::FakeOutcome o;
    o.run_s = 0.05;
    o.metrics_lines = {eval_line(0, 10, 0.3), eval_line(1, 20, 0.6), eval_line(2, 20, 0.6, true)};
    return o;
  });
  bp = &backend;
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK_FALSE(out->interrupted);
  CHECK(out->snapshot.complete == 5);
  CHECK(backend.submitted().size() == 5);
  CHECK(max_running <= 2);
  std::set<std::string> trial_ids;
  for (const auto& job : backend.submitted()) {
    trial_ids.insert(job.env.at("DLSWEEP_TRIAL_ID"));
    CHECK(job.env.at("DLSWEEP_STUDY") == "ok");
    CHECK(job.env.at("DLSWEEP_ATTEMPT") == "0");
    CHECK(fs::path(job.env.at("DLSWEEP_TRIAL_DIR")).is_absolute());
  }
  // DLSWEEP_TRIAL_ID is the trial number (0..4), not the database id (1..5).
  CHECK(trial_ids == std::set<std::string>{"0", "1", "2", "3", "4"});
  auto sums = f.storage->summaries(f.study_id);
  REQUIRE(sums.has_value());
  REQUIRE(sums->size() == 5);
  for (const auto& t : *sums) {
    CHECK(t.state == "COMPLETE");
    REQUIRE(t.best_value);
    CHECK(*t.best_value == Approx(0.6));
    REQUIRE(t.steps_to_target);
    CHECK(*t.steps_to_target == 20);
  }
  auto study = f.storage->find_study("ok");
  CHECK((*study)->state == "FINISHED");
}

TEST_CASE("engine: failed trials are retried with a new attempt, then stay FAILED") {
  Fixture f("retry", "  max_retries: 1\n  fail_fast: 0  # every first attempt fails: retries, not fail-fast, are tested here");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    // Trial x=1 fails on every attempt; the others fail once then succeed.
    bool always = job.env.at("DLSWEEP_TRIAL_ID") == "0";
    o.exit_code = (always || job.attempt == 0) ? 9 : 0;
    o.metrics_lines = {eval_line(0, 1, job.attempt == 0 ? 0.1 : 0.7)};
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 4);
  CHECK(out->snapshot.failed == 1);
  CHECK(backend.submitted().size() == 10);
  auto trials = f.storage->list_trials(f.study_id);
  for (const auto& t : *trials) {
    CHECK(t.attempt == 1);
    // Attempt 0's metrics were set aside before the retry.
    CHECK(fs::exists(fs::path(t.trial_dir) / "metrics.attempt-0.jsonl"));
  }
  auto failed = f.storage->get_trial(1);
  REQUIRE(failed.has_value());
  CHECK(failed->state == TrialState::failed);
  CHECK(failed->message.find("exit code 9") != std::string::npos);
  // Both attempts' records are in the database under their own attempt.
  auto q = f.storage->query("SELECT COUNT(DISTINCT attempt) FROM records WHERE trial_id = 2");
  REQUIRE(q.has_value());
  CHECK(q->rows[0][0].get<int>() == 2);
}

TEST_CASE("engine: interrupt cancels live trials and the rest never start") {
  Fixture f("interrupt", "");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 30;  // would outlive the test
    return o;
  });
  boost::asio::steady_timer t(io);
  auto out = f.run(backend, io, [&](orch::Engine& e) {
    t.expires_after(std::chrono::milliseconds(100));
    t.async_wait([&](auto) { e.interrupt("test"); });
  });
  REQUIRE(out.has_value());
  CHECK(out->interrupted);
  CHECK(out->snapshot.cancelled == 2);
  CHECK(backend.submitted().size() == 2);
  auto trials = f.storage->list_trials(f.study_id);
  REQUIRE(trials->size() == 2);
  for (const auto& t : *trials) CHECK(t.state == TrialState::cancelled);
  CHECK((*f.storage->find_study("interrupt"))->state == "STOPPED");
}

TEST_CASE("engine: interrupt with every trial live: all end CANCELLED") {
  // The fake posts its `cancelled` at once, as the contract says; engine_cancel_test.cpp has
  // the backend that answers from inside cancel() itself.
  Fixture f("interrupt-all", "");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 5, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 30;
    return o;
  });
  boost::asio::steady_timer t(io);
  auto out = f.run(backend, io, [&](orch::Engine& e) {
    t.expires_after(std::chrono::milliseconds(100));
    t.async_wait([&](auto) { e.interrupt("test"); });
  });
  REQUIRE(out.has_value());
  CHECK(out->snapshot.cancelled == 5);
  auto trials = f.storage->list_trials(f.study_id);
  REQUIRE(trials->size() == 5);
  for (const auto& t : *trials) CHECK(t.state == TrialState::cancelled);
}

TEST_CASE("engine: a job the backend loses ends FAILED with the backend's reason") {
  Fixture f("lost", "");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.lost = true;
    o.message = "node fell over";
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.failed == 5);
  auto t = f.storage->get_trial(1);
  CHECK(t->message.find("node fell over") != std::string::npos);
}

TEST_CASE("engine: search auto records and logs the algorithm it uses, and each switch") {
  // auto_gp_trials: 3, so the numeric space switches from gp to cmaes at trial 3 (issue 40:
  // "says in the log and in best --explain which it used when").
  Fixture f("autochoice", "  max_retries: 0");
  f.use_study(R"(name: autochoice
backend: {kind: local, max_concurrent: 1}
trial:
  command: [fake]
objective: {metric: acc, mode: max}
search: {algorithm: auto, trials: 5, seed: 1, auto_gp_trials: 3}
space: {x: {uniform: [0.0, 1.0]}}
)");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 1, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(0, 10, 0.6, true)};
    return o;
  });
  std::FILE* log = std::tmpfile();
  REQUIRE(log);
  auto out = f.run(backend, io, {}, log);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 5);
  std::string text;
  std::rewind(log);
  for (int ch; (ch = std::fgetc(log)) != EOF;) text += static_cast<char>(ch);
  std::fclose(log);
  auto events = f.storage->events(f.study_id);
  REQUIRE(events.has_value());
  std::vector<SearchChoice> choices;
  for (const auto& e : *events)
    if (e.kind == kSearchChoiceEventKind)
      if (auto c = SearchChoice::from_json(nlohmann::json::parse(e.reason))) choices.push_back(*c);
  // One event per algorithm in force, each as auto's rule words it for its first trial.
  REQUIRE(choices.size() == 2);
  for (const auto& c : choices) {
    const auto expected = search::choose_algorithm(f.spec.space, c.from, 1, false, 3);
    CHECK(c.algorithm == expected.algorithm);
    CHECK(c.reason == expected.reason);
  }
  CHECK(choices[0].from == 0);
  CHECK(choices[0].algorithm == "gp");
  CHECK(choices[1].from == 3);
  CHECK(choices[1].algorithm == "cmaes");
  INFO(text);
  CHECK_THAT(text, Catch::Contains("search auto: uses " + choices[0].reason + " from trial 0"));
  CHECK_THAT(text, Catch::Contains("search auto: switches to " + choices[1].reason + " from trial 3"));
}
