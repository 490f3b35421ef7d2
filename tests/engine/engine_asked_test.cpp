// What a researcher can believe about a trial's end (issue "Your own script, honestly"),
// on the engine with the fake backend and a real SQLite file: an objective that ends NaN
// is a divergence; a first evaluation without the objective stops the trial at once;
// trials that all crash the same way stop the sweep early and are counted as trials; an
// attempt whose final record is on disk is never run again by resume.
#include <catch2/catch.hpp>

#include <fstream>

#include "engine_fixture.hpp"
#include "engine/trial_files.hpp"
#include "engine/trial_outcome.hpp"
#include "tests/support/fake_backend.hpp"

using namespace engine_test;

namespace {

std::string null_line(int seq, int step, bool final = false) {
  return fmt::format(R"({{"seq":{},"kind":"{}","step":{},"epoch":1,"samples":32,"wall_s":1,"metrics":{{"acc":null}}}})",
                     seq, final ? "final" : "eval", step);
}

std::string loss_only(int seq, int step) {
  return fmt::format(R"({{"seq":{},"kind":"eval","step":{},"epoch":1,"samples":32,"wall_s":1,"metrics":{{"loss":0.5}}}})",
                     seq, step);
}

}  // namespace

TEST_CASE("engine: an objective NaN at the end is FAILED 'diverged', not retried, counted as diverged") {
  Fixture f("nanend", "  max_retries: 2");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(0, 10, 0.6), null_line(1, 20, true)};  // good, then NaN; exit 0
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 0);
  CHECK(out->snapshot.failed == 5);
  CHECK(backend.submitted().size() == 5);
  REQUIRE(out->failure_reasons.size() == 1);
  CHECK(out->failure_reasons[0].first == orch::diverged_phrase("acc"));
  CHECK(out->failure_reasons[0].second == 5);
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows);
  for (const auto& t : *rows) {
    CHECK(t.state == TrialState::failed);
    CHECK_THAT(t.message, Catch::StartsWith("diverged"));
  }
}

TEST_CASE("engine: a first evaluation without the objective stops the trial at once, FAILED, not retried") {
  Fixture f("firstnoobj", "  max_retries: 2");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 60;  // a long job: its 200 reports would take a minute to the clean exit
    for (int i = 0; i < 200; ++i) o.metrics_lines.push_back(loss_only(i, 10 * (i + 1)));
    return o;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  // Every trial of the program fails the same way: fail_fast (3) stops the sweep there. Two
  // run at once, so under load the other one's first evaluation may be read in the same turn
  // as the third failure: 3 or 4 FAILED, never all 5.
  CHECK(out->snapshot.failed >= 3);
  CHECK(out->snapshot.failed <= 4);
  CHECK_THAT(out->failed_fast, Catch::Contains("3 trials failed the same way"));
  CHECK_THAT(out->failed_fast, Catch::Contains("objective acc was never reported"));
  CHECK(backend.submitted().size() < 5);
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows);
  int failed = 0;
  for (const auto& t : *rows) {
    if (t.state != TrialState::failed) continue;
    ++failed;
    CHECK_THAT(t.message, Catch::Contains("objective acc was never reported (it reported: loss)"));
    CHECK_THAT(t.message, Catch::Contains("stopped at its first evaluation"));
  }
  CHECK(failed == out->snapshot.failed);
  // Stopped, not run to the end: far less than one job's minute.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
}

TEST_CASE("engine: a constraint reported alone at the first evaluation is no missing objective (issue 43)") {
  // Optuna's constrained examples report the constraint at step 0 and return the objective at
  // the end: the first-evaluation check waits for an evaluation that is not the constraints'.
  Fixture f("constraintfirst", "  max_retries: 0");
  f.use_study(R"(name: constraintfirst
backend: {kind: local, max_concurrent: 2}
trial:
  command: [fake]
objective: {metric: acc, mode: max}
constraints: [{metric: c1, max: 0}]
search: {algorithm: grid}
space: {x: [1, 2, 3]}
)");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.05;
    o.metrics_lines = {
        R"({"seq":0,"kind":"eval","step":0,"epoch":0,"samples":0,"wall_s":0.1,"metrics":{"c1":-1}})",
        eval_line(1, 10, 0.6, true)};
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 3);
  CHECK(out->snapshot.failed == 0);
  CHECK(out->failed_fast.empty());
  // A misnamed objective is still caught at the first evaluation that is not the constraint's.
  Fixture g("constraintmisnamed", "  max_retries: 0");
  g.use_study(R"(name: constraintmisnamed
backend: {kind: local, max_concurrent: 1}
trial:
  command: [fake]
objective: {metric: acc, mode: max}
constraints: [{metric: c1, max: 0}]
search: {algorithm: grid}
space: {x: [1]}
)");
  boost::asio::io_context io2;
  sched::FakeBackend backend2(io2, 1, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 60;  // stopped at its second evaluation, long before its end
    o.metrics_lines = {R"({"seq":0,"kind":"eval","step":0,"epoch":0,"samples":0,"wall_s":0.1,"metrics":{"c1":-1}})"};
    for (int i = 1; i < 100; ++i) o.metrics_lines.push_back(loss_only(i, 10 * i));
    return o;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto out2 = g.run(backend2, io2);
  REQUIRE(out2.has_value());
  CHECK(out2->snapshot.failed == 1);
  auto rows = g.storage->list_trials(g.study_id);
  REQUIRE(rows);
  REQUIRE(rows->size() == 1);
  CHECK_THAT(rows->front().message, Catch::Contains("stopped at its first evaluation"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
}

TEST_CASE("engine: trials that fail the same way before any completes stop the sweep (fail_fast)") {
  Fixture f("failfast", "  max_retries: 2");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    std::ofstream(job.workdir / "stderr.log") << "Traceback (most recent call last):\n"
                                              << "ModuleNotFoundError: No module named 'torchx'\n";
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.exit_code = 1;
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK_THAT(out->failed_fast, Catch::Contains("3 trials failed the same way"));
  CHECK_THAT(out->failed_fast, Catch::Contains("ModuleNotFoundError: No module named 'torchx'"));
  CHECK(backend.submitted().size() < 12);  // 5 trials x 3 attempts without fail_fast
  // The summary counts trials, not attempts, and quotes the program's last words.
  REQUIRE(out->failure_reasons.size() == 1);
  CHECK(out->failure_reasons[0].first == "exit code 1: ModuleNotFoundError: No module named 'torchx'");
  // A trial whose retry had not started when the sweep stopped stays WAITING (resume runs it)
  // and counts among the failures: which trials those are depends on how the ends and the
  // launches interleave (a slot freed before its trial's end is handled may start a new trial).
  CHECK(out->failure_reasons[0].second == out->snapshot.failed + out->snapshot.waiting);
  std::set<std::int64_t> launched;
  for (const auto& j : backend.submitted()) launched.insert(j.trial_id);
  CHECK(static_cast<std::int64_t>(launched.size()) ==
        out->snapshot.failed + out->snapshot.waiting + out->snapshot.cancelled);
  auto study = f.storage->find_study("failfast");
  REQUIRE(study);
  REQUIRE(*study);
  CHECK((*study)->state == "STOPPED");
}

TEST_CASE("engine: the same failure in each trial's own directory fails fast (device: cuda without a GPU)",
          "[fail_fast]") {
  // dlsweep-train names the trial's params.json in its error: every last stderr line differs
  // by its trial directory, and only by that. Before, no two "matched": every trial launched
  // and failed (twice with max_retries: 1).
  Fixture f("nogpu", "  max_retries: 1");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    std::ofstream(job.workdir / "stderr.log")
        << "dlsweep-train: " << (job.workdir / "params.json").string()
        << ": device: no GPU answers for device cuda: no CUDA device (fix: run on nodes with a GPU, or device: "
           "auto (the CPU where there is no GPU) or device: cpu)\n";
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.exit_code = 1;  // what the machine lacks is a failure (another node may have it): retried
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK_THAT(out->failed_fast, Catch::Contains("3 trials failed the same way"));
  CHECK_THAT(out->failed_fast, Catch::Contains("no GPU answers for device cuda"));
  std::set<std::int64_t> launched;
  for (const auto& j : backend.submitted()) launched.insert(j.trial_id);
  CHECK(launched.size() < 5);
  CHECK(backend.submitted().size() < 10);  // 5 trials x 2 attempts without fail_fast
  // Three trials failed (the stop's count); each is FAILED, WAITING (its retry not started when
  // the sweep stopped) or CANCELLED (its retry running then: how ends and launches interleave
  // depends on the machine's load).
  CHECK(out->snapshot.failed + out->snapshot.waiting + out->snapshot.cancelled >= 3);
  CHECK(launched.size() >= 3);
  CHECK(static_cast<std::int64_t>(launched.size()) ==
        out->snapshot.failed + out->snapshot.waiting + out->snapshot.cancelled);
}

TEST_CASE("engine: trials failing in different ways do not fail fast; trial.fail_fast: 0 never does") {
  for (const char* extra : {"  max_retries: 0", "  max_retries: 0\n  fail_fast: 0"}) {
    const bool off = std::string(extra).find("fail_fast") != std::string::npos;
    Fixture f(off ? "ffoff" : "ffdiff", extra);
    boost::asio::io_context io;
    sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
      // Different causes (other words), not the same cause in another trial's directory.
      const std::string file = job.workdir.filename().string() == "trial-0000" ? "train.csv"
                               : job.workdir.filename().string() == "trial-0001" ? "valid.csv"
                               : job.workdir.filename().string() == "trial-0002" ? "test.csv"
                               : job.workdir.filename().string() == "trial-0003" ? "labels.csv"
                                                                                  : "vocab.txt";
      std::ofstream(job.workdir / "stderr.log") << (off ? std::string("same error\n") : "cannot read /data/" + file + "\n");
      sched::FakeOutcome o;
      o.run_s = 0.01;
      o.exit_code = 1;
      return o;
    });
    auto out = f.run(backend, io);
    REQUIRE(out.has_value());
    CHECK(out->failed_fast.empty());
    CHECK(out->snapshot.failed == 5);
  }
}

TEST_CASE("engine: resume records an attempt whose final record is on disk; it never runs it again") {
  Fixture f("finishedunwatched", "");
  // Trial 0 finished while no orchestrator watched (its final record is on disk); trial 1
  // was cut short (no final record): only trial 1 runs again.
  std::vector<std::int64_t> ids;
  for (int n = 0; n < 2; ++n) {
    auto dir = orch::trial_dir_for(f.dir / "runs", "finishedunwatched", n);
    nlohmann::json params = {{"x", n + 1}};
    REQUIRE(orch::prepare_trial_dir(dir, params));
    auto id = f.storage->create_trial(f.study_id, n, params, dir.string());
    REQUIRE(id);
    ids.push_back(*id);
    REQUIRE(f.storage->transition({*id, TrialState::waiting, TrialState::queued, 0, "test", "set up"}));
    REQUIRE(f.storage->transition({*id, TrialState::queued, TrialState::running, 0, "test", "set up"}));
    std::ofstream m(dir / "metrics.jsonl");
    m << eval_line(0, 10, 0.6) << "\n";
    if (n == 0) m << eval_line(1, 20, 0.7, true) << "\n";
  }
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(2, 30, 0.8, true)};
    return o;
  });
  orch::Engine::RestoreCounts counts;
  auto out = f.resume(backend, io, counts);
  REQUIRE(out.has_value());
  CHECK(counts.finished == 1);
  CHECK(counts.requeued == 1);
  for (const auto& j : backend.submitted()) CHECK(j.trial_id != ids[0]);
  auto t0 = f.storage->get_trial(ids[0]);
  REQUIRE(t0);
  CHECK(t0->state == TrialState::complete);
  CHECK(t0->attempt == 0);
  // Its two records, once each.
  auto points = f.storage->metric_points(f.study_id, "acc");
  REQUIRE(points);
  CHECK(points->at(ids[0]).size() == 2);
}
