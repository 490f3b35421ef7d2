// Honest outcomes of the engine (fake backend, real SQLite): a clean exit without the
// objective is a failure; deterministic failures are not retried; only COMPLETE trials
// are the progress line's best; `resume --rerun` runs cancelled trials again.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "engine_fixture.hpp"
#include "tests/support/fake_backend.hpp"

static std::string loss_line(int seq, int step, double loss, bool final = false) {
  return fmt::format(R"({{"seq":{},"kind":"{}","step":{},"epoch":{},"samples":{},"wall_s":{},"metrics":{{"loss":{}}}}})",
                     seq, final ? "final" : "eval", step, step / 10.0, step * 32, step * 0.1, loss);
}

TEST_CASE("engine: exit 0 without the objective metric ends FAILED, is not retried, and is said why") {
  Fixture f("noobj", "  max_retries: 2\n  fail_fast: 0");  // fail_fast would stop it at 3 (engine_asked_test)
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {loss_line(0, 10, 0.5), loss_line(1, 20, 0.4, true)};
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 0);
  CHECK(out->snapshot.failed == 5);
  CHECK(backend.submitted().size() == 5);  // no retries: it would report the same metrics again
  REQUIRE(out->failure_reasons.size() == 1);
  CHECK(out->failure_reasons[0].first == "objective acc was never reported (it reported: loss)");
  CHECK(out->failure_reasons[0].second == 5);
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  for (const auto& t : *rows) {
    CHECK(t.state == TrialState::failed);
    INFO(t.message);
    CHECK(t.message.find("objective acc was never reported (it reported: loss)") != std::string::npos);
  }
}

TEST_CASE("engine: a trial that reached the target then diverged is not the best, and is not retried") {
  Fixture f("diverged", "  max_retries: 2");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    if (job.env.at("DLSWEEP_TRIAL_ID") == "0") {
      o.metrics_lines = {eval_line(0, 10, 0.99)};
      o.exit_code = 3;  // diverged after its best evaluation
    } else {
      o.metrics_lines = {eval_line(0, 10, 0.6), eval_line(1, 20, 0.7, true)};
    }
    return o;
  });
  auto out = f.run(backend, io);
  REQUIRE(out.has_value());
  CHECK(out->snapshot.complete == 4);
  CHECK(out->snapshot.failed == 1);
  CHECK(backend.submitted().size() == 5);
  REQUIRE(out->snapshot.best_value);
  CHECK(*out->snapshot.best_value == Approx(0.7));
  CHECK(out->snapshot.best_trial != 0);
  auto t = f.storage->get_trial(1);
  REQUIRE(t.has_value());
  CHECK(t->number == 0);
  CHECK(t->attempt == 0);
  CHECK(t->message.find("diverged") != std::string::npos);
  CHECK(t->message.find("not retried") != std::string::npos);
}

TEST_CASE("engine: resume with rerun cancelled runs the holes Ctrl-C left, as new attempts") {
  Fixture f("rerun", "");
  {
    boost::asio::io_context io;
    sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
      sched::FakeOutcome o;
      o.run_s = 30;  // interrupted long before
      return o;
    });
    // Posted twice: the interrupt runs right after run()'s first fill() launched two trials.
    auto out = f.run(backend, io, [&](orch::Engine& e) {
      boost::asio::post(io, [&] { boost::asio::post(io, [&] { e.interrupt("test"); }); });
    });
    REQUIRE(out.has_value());
    REQUIRE(out->snapshot.cancelled == 2);
  }
  auto trials = f.storage->list_trials(f.study_id);
  auto sums = f.storage->summaries(f.study_id);
  auto jobs = f.storage->list_jobs(f.study_id);
  REQUIRE(trials.has_value());
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(0, 10, 0.6, true)};
    return o;
  });
  f.rerun = {TrialState::cancelled};
  std::size_t rerun = 0;
  auto out = f.run(backend, io, [&](orch::Engine& e) {
    auto st = e.restore(*trials, *sums, *jobs);
    INFO((st ? std::string() : st.error().message()));
    REQUIRE(st.has_value());
    rerun = e.restore_counts().rerun;
  });
  REQUIRE(out.has_value());
  CHECK(rerun == 2);
  CHECK(out->snapshot.complete == 5);
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  for (const auto& t : *rows) {
    CHECK(t.state == TrialState::complete);
    CHECK(t.attempt == (t.number < 2 ? 1 : 0));
  }
  auto ev = f.storage->query("SELECT COUNT(*) FROM events WHERE from_state='CANCELLED' AND to_state='WAITING'");
  REQUIRE(ev.has_value());
  CHECK(ev->rows[0][0].get<int>() == 2);
}

/// The sweep's outcome and what it printed (progress and notes).
struct Printed {
  Result<orch::SweepOutcome> r;
  std::string text;
};

static Printed run_printing(Fixture& f, sched::Backend& backend, boost::asio::io_context& io) {
  std::FILE* out = std::tmpfile();
  auto r = f.run(backend, io, {}, out);
  std::fflush(out);
  std::rewind(out);
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
  std::fclose(out);
  return {std::move(r), std::move(text)};
}

TEST_CASE("engine: a record that reuses a seq is skipped and said, and the value is that of the stored records") {
  // The database keys records by (attempt, seq) and keeps the first: the progress line said
  // "complete: acc = 0.9" (the second record) while the database, results and best held 0.3.
  Fixture f("dupseq", "  max_retries: 0");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(0, 10, 0.3), eval_line(0, 20, 0.9, true)};
    return o;
  });
  auto [r, text] = run_printing(f, backend, io);
  REQUIRE(r.has_value());
  CHECK(r->snapshot.complete == 5);
  REQUIRE(r->snapshot.best_value);
  CHECK(*r->snapshot.best_value == Approx(0.3));
  INFO(text);
  CHECK(text.find("seq 0 was already used by an earlier record of this attempt") != std::string::npos);
  CHECK(text.find("acc = 0.9") == std::string::npos);
}

TEST_CASE("engine: a last record without its newline is named when the trial ends, not called never reported") {
  Fixture f("nonewline", "  max_retries: 0\n  fail_fast: 0");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
    // The program's only record, written without '\n' before it exited 0.
    fs::create_directories(job.workdir);
    std::ofstream(job.workdir / "metrics.jsonl", std::ios::app)
        << R"({"seq":0,"kind":"final","step":20,"epoch":2,"samples":64,"wall_s":1,"metrics":{"acc":0.7}})";
    sched::FakeOutcome o;
    o.run_s = 0.01;
    return o;
  });
  auto [r, text] = run_printing(f, backend, io);
  REQUIRE(r.has_value());
  CHECK(r->snapshot.failed == 5);
  INFO(text);
  CHECK(text.find("has no newline at its end: not read") != std::string::npos);
  auto rows = f.storage->list_trials(f.study_id);
  REQUIRE(rows.has_value());
  for (const auto& t : *rows) {
    INFO(t.message);
    CHECK(t.message.find("objective acc was never reported") != std::string::npos);
    CHECK(t.message.find("the last line of metrics.jsonl has no newline at its end") != std::string::npos);
    CHECK(t.message.find(R"("kind":"final")") != std::string::npos);
  }
}

TEST_CASE("engine: the summary of trials past trial.timeout says they timed out") {
  // It said "5 trials: cancelled by the backend" for a study whose trials hit its timeout.
  Fixture f("timeout", "  timeout: 0.05\n  max_retries: 0");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 30;
    return o;
  });
  auto r = f.run(backend, io);
  REQUIRE(r.has_value());
  CHECK(r->snapshot.failed == 5);
  REQUIRE(r->failure_reasons.size() == 1);
  CHECK(r->failure_reasons[0].first == "cancelled by the backend: timed out after 0.05 s");
  CHECK(r->failure_reasons[0].second == 5);
}

TEST_CASE("engine: a jump in seq says that records were lost, as when metrics.jsonl is rewritten") {
  // A program that opened metrics.jsonl with "w" for each record lost records silently.
  Fixture f("seqjump", "  max_retries: 0");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    // A bad line (seq 2) is said as such: the jump over it is no news; 3 is lost.
    o.metrics_lines = {eval_line(0, 10, 0.3), eval_line(1, 20, 0.4), "not json", eval_line(4, 50, 0.9, true)};
    return o;
  });
  auto [r, text] = run_printing(f, backend, io);
  REQUIRE(r.has_value());
  CHECK(r->snapshot.complete == 5);
  INFO(text);
  CHECK(text.find("skipped a bad line") != std::string::npos);
  CHECK(text.find("seq jumps from 1 to 4") != std::string::npos);
  CHECK(text.find("records 2..3 never reached dlsweep") != std::string::npos);
  CHECK(text.find("seq jumps from 0 to 1") == std::string::npos);
}

TEST_CASE("engine: a seq skipped over a bad line alone is no jump") {
  Fixture f("seqbad", "  max_retries: 0");
  boost::asio::io_context io;
  sched::FakeBackend backend(io, 2, [&](const sched::JobSpec&) {
    sched::FakeOutcome o;
    o.run_s = 0.01;
    o.metrics_lines = {eval_line(0, 10, 0.3), "not json", eval_line(2, 50, 0.9, true)};
    return o;
  });
  auto [r, text] = run_printing(f, backend, io);
  REQUIRE(r.has_value());
  INFO(text);
  CHECK(text.find("skipped a bad line") != std::string::npos);
  CHECK(text.find("seq jumps") == std::string::npos);
}

TEST_CASE("engine: objective.rank_by final — the progress line's best (and the samplers' value) is the final report",
          "[rank_by]") {
  for (const bool final : {false, true}) {
    INFO("rank_by final: " << final);
    Fixture f(final ? "rank-final" : "rank-best", "  max_retries: 0");
    f.spec.objective.rank_by = final ? "final" : "best";
    for (auto& o : f.spec.objectives) o.rank_by = f.spec.objective.rank_by;
    boost::asio::io_context io;
    sched::FakeBackend backend(io, 2, [&](const sched::JobSpec& job) {
      sched::FakeOutcome o;
      o.run_s = 0.01;
      if (job.env.at("DLSWEEP_TRIAL_ID") == "0") o.metrics_lines = {eval_line(0, 10, 0.9), eval_line(1, 20, 0.3, true)};
      else o.metrics_lines = {eval_line(0, 10, 0.6), eval_line(1, 20, 0.7, true)};
      return o;
    });
    auto out = f.run(backend, io);
    REQUIRE(out.has_value());
    CHECK(out->snapshot.complete == 5);
    REQUIRE(out->snapshot.best_value);
    CHECK(*out->snapshot.best_value == Approx(final ? 0.7 : 0.9));
    CHECK((out->snapshot.best_trial == 0) == !final);
  }
}
