// The engine's pure decisions, apart from its side effects: the cancel-request file's
// words, a trial's curve bookkeeping, what a job's end means for its trial, and when the
// pruner stops a trial.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "common/protocol.hpp"
#include "engine/cancel_request.hpp"
#include "engine/failure_policy.hpp"
#include "engine/prune_policy.hpp"
#include "engine/trial_curve.hpp"
#include "engine/trial_outcome.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;

TEST_CASE("cancel request: words round-trip, junk is ignored") {
  CHECK(parse_cancel_request(format_cancel_request({true, {}})).all);
  auto r = parse_cancel_request(format_cancel_request({false, {3, 12}}));
  CHECK_FALSE(r.all);
  CHECK(r.numbers == std::vector<std::int64_t>{3, 12});
  auto junk = parse_cancel_request("  7\n\nx12 4.5 -\n9\r\n");
  CHECK_FALSE(junk.all);
  CHECK(junk.numbers == std::vector<std::int64_t>{7, 9});
  CHECK(parse_cancel_request("").numbers.empty());
}

static protocol::Record rec(protocol::RecordKind kind, std::int64_t step, double epoch,
                            std::map<std::string, double> metrics) {
  protocol::Record r;
  r.kind = kind;
  r.step = step;
  r.epoch = epoch;
  r.metrics = std::move(metrics);
  return r;
}

TEST_CASE("trial curve: points on every axis, last and best by direction, reported names") {
  using protocol::RecordKind;
  TrialCurve c;
  CurveAxis by_epoch{"loss", /*maximize=*/false};
  CHECK(c.add(rec(RecordKind::eval, 10, 0.5, {{"loss", 2.0}, {"acc", 0.1}}), by_epoch));
  CHECK(c.add(rec(RecordKind::eval, 20, 1.0, {{"loss", 1.0}}), by_epoch));
  CHECK_FALSE(c.add(rec(RecordKind::log, 25, 1.2, {{"loss", 0.1}}), by_epoch));  // not a report
  CHECK_FALSE(c.add(rec(RecordKind::eval, 30, 1.5, {{"loss", std::nan("")}}), by_epoch));  // NaN: no point
  CHECK_FALSE(c.add(rec(RecordKind::final, 40, 2.0, {{"loss", 1.5}}), by_epoch));  // a point, but final
  REQUIRE(c.points.size() == 3);
  CHECK(c.points[1].step == 20);
  CHECK(c.points[1].epoch == 1.0);
  CHECK(c.points[1].value == 1.0);
  CHECK(*c.last_value == 1.5);
  CHECK(*c.best_value == 1.0);
  CHECK(c.reported == std::set<std::string>{"acc", "loss"});

  TrialCurve s;
  CurveAxis by_step{"acc", true};
  s.add(rec(RecordKind::eval, 10, 0.5, {{"acc", 0.3}}), by_step);
  s.add(rec(RecordKind::eval, 20, 1.0, {{"acc", 0.2}}), by_step);
  CHECK(s.points[1].step == 20);
  CHECK(*s.best_value == 0.3);
}

static sched::JobEvent exited(int code, int signal = 0) {
  sched::JobEvent ev;
  ev.kind = sched::JobEventKind::exited;
  ev.exit_code = code;
  ev.signal = signal;
  return ev;
}

TEST_CASE("terminal decision: complete, no objective, pruned, cancelled, failed") {
  TerminalFacts f;
  f.state = TrialState::running;
  f.max_retries = 2;
  f.metric = "acc";
  f.reported = {"acc"};
  auto d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::complete);
  CHECK(d.event == TrialEvent::completed);
  CHECK(*d.exit_code == 0);

  f.reported = {"loss"};
  d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::no_objective);
  CHECK(d.deterministic);
  CHECK_THAT(d.why, Catch::Contains(kNotRetried));

  f.reported = {"acc"};
  f.stop_reason = "pruned";
  f.prune_note = "pruned at epoch 2: behind";
  d = decide_terminal(exited(protocol::kExitStopped), f);
  CHECK(d.outcome == Outcome::pruned);
  CHECK(d.why == "pruned at epoch 2: behind");

  // Asked to stop at the target (objective.stop_at_target): COMPLETE, whether it exits 75
  // (stopped on request) or 0.
  f.stop_reason = kStopAtTarget;
  d = decide_terminal(exited(protocol::kExitStopped), f);
  CHECK(d.outcome == Outcome::complete);
  CHECK(d.event == TrialEvent::completed);
  CHECK(d.why == "stopped at the target");
  d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::complete);
  CHECK(d.why == "stopped at the target");

  f.stop_reason = "cancelled by `dlsweep cancel`";
  sched::JobEvent cancelled;
  cancelled.kind = sched::JobEventKind::cancelled;
  d = decide_terminal(cancelled, f);
  CHECK(d.outcome == Outcome::cancelled);
  CHECK(d.event == TrialEvent::cancel);
  CHECK_FALSE(d.exit_code);

  // Unasked exit 75 is a transient failure; a QUEUED trial that exited is marked started.
  f.stop_reason.clear();
  f.state = TrialState::queued;
  f.stderr_tail = "boom";
  d = decide_terminal(exited(protocol::kExitStopped), f);
  CHECK(d.outcome == Outcome::failed);
  CHECK(d.mark_started);
  CHECK_FALSE(d.deterministic);
  CHECK_THAT(d.why, Catch::Contains("stderr: boom"));

  // Exit 3 (diverged) is deterministic: not retried, and the message says so.
  d = decide_terminal(exited(3), f);
  CHECK(d.deterministic);
  CHECK_THAT(d.why, Catch::Contains(kNotRetried));

  sched::JobEvent lost;
  lost.kind = sched::JobEventKind::lost;
  lost.message = "node failure";
  d = decide_terminal(lost, f);
  CHECK(d.event == TrialEvent::lost);
  CHECK_THAT(d.why, Catch::StartsWith("lost: node failure"));
}

TEST_CASE("terminal decision: a trial asked to stop ends in the state of the ask, whatever its exit") {
  TerminalFacts f;
  f.state = TrialState::running;
  f.max_retries = 2;
  f.metric = "acc";
  f.reported = {"acc"};
  sched::JobEvent cancelled;
  cancelled.kind = sched::JobEventKind::cancelled;
  // A script that breaks out of its loop exits 0; torchrun over stopped workers exits 1;
  // a job killed after the grace period dies by signal.
  for (const auto& ev : {exited(0), exited(protocol::kExitStopped), exited(1), exited(0, 15), cancelled}) {
    f.stop_reason = "pruned";
    f.prune_note = "pruned at epoch 2: behind";
    auto d = decide_terminal(ev, f);
    CHECK(d.outcome == Outcome::pruned);
    CHECK(d.event == TrialEvent::pruned);
    CHECK(d.why == "pruned at epoch 2: behind");

    f.stop_reason = "cancelled by `dlsweep cancel`";
    d = decide_terminal(ev, f);
    CHECK(d.outcome == Outcome::cancelled);
    CHECK(d.event == TrialEvent::cancel);

    f.stop_reason = kStopAtTarget;
    d = decide_terminal(ev, f);
    CHECK(d.outcome == Outcome::complete);
    CHECK(d.why == "stopped at the target");

    f.stop_reason = kStopNoObjective;
    f.reported = {"loss"};
    d = decide_terminal(ev, f);
    CHECK(d.outcome == Outcome::no_objective);
    CHECK(d.event == TrialEvent::failed);
    CHECK(d.deterministic);
    f.reported = {"acc"};
  }
}

TEST_CASE("terminal decision: an objective NaN/inf at the end of a clean exit is a divergence") {
  TerminalFacts f;
  f.state = TrialState::running;
  f.max_retries = 2;
  f.metric = "val_loss";
  f.reported = {"val_loss"};
  f.objective_nonfinite = true;
  auto d = decide_terminal(exited(0), f);
  CHECK(d.outcome == Outcome::no_objective);
  CHECK(d.event == TrialEvent::failed);
  CHECK(d.deterministic);
  CHECK(d.failure == diverged_phrase("val_loss"));
  CHECK_THAT(d.why, Catch::StartsWith("diverged"));
  CHECK_THAT(d.why, Catch::Contains(kNotRetried));
}

TEST_CASE("prune policy: the study's pruner, within the group, past warmup and startup") {
  auto median = search::make_pruner("median", {{"startup_trials", 2}, {"warmup", 1}, {"group_by", {"batch_size"}}});
  REQUIRE(median);
  auto peer = [](std::int64_t n, std::int64_t bs, double v) {
    search::TrialRecord t{n, {{"batch_size", bs}}, search::TrialStatus::complete, v, {}};
    t.curve = {{100, 1, 6400, 10, v}, {200, 2, 12800, 20, v}};
    return t;
  };
  search::History h;
  h.trials = {peer(0, 64, 0.8), peer(1, 64, 0.6), peer(2, 4096, 0.1)};
  auto trial = [](std::int64_t bs, std::vector<std::pair<double, double>> pts) {
    search::TrialRecord t{9, {{"batch_size", bs}, {"lr", 0.1}}, search::TrialStatus::running, std::nullopt, {}};
    for (auto [e, v] : pts) t.curve.push_back({e * 100, e, e * 6400, e * 10, v});
    return t;
  };
  CHECK_FALSE(decide_prune(**median, "acc", trial(64, {{0.5, 0.0}}), 0, h));  // before warmup
  auto stop = decide_prune(**median, "acc", trial(64, {{1, 0.5}}), 0, h);
  REQUIRE(stop);
  CHECK_THAT(stop->note, Catch::StartsWith("pruned at epoch 1 (acc, median pruner)"));
  CHECK_THAT(stop->note, Catch::Contains("median 0.7 of 2 completed trial(s)"));
  CHECK_THAT(stop->note, Catch::Contains("batch_size=64"));
  CHECK_FALSE(decide_prune(**median, "acc", trial(64, {{1, 0.75}}), 0, h));
  // Only one peer in the 4096 group: fewer than startup_trials, no verdict.
  CHECK_FALSE(decide_prune(**median, "acc", trial(4096, {{1, 0.0}}), 0, h));
  auto none = search::make_pruner("none");
  CHECK_FALSE(decide_prune(**none, "acc", trial(64, {{1, 0.0}}), 0, h));
  // Several reports at once: each is judged as it stood (asha decides at the rung's report).
  auto asha = search::make_pruner("asha", {{"min_resource", 1}, {"reduction_factor", 2}});
  REQUIRE(asha);
  auto late = trial(64, {{1, 0.0}, {1.5, 0.9}});  // behind at the rung (epoch 1), good after
  CHECK(decide_prune(**asha, "acc", late, 0, h));
  CHECK_FALSE(decide_prune(**asha, "acc", late, 1, h));  // epoch 1 was judged already
  CHECK(history_status(TrialState::cancelled) == search::TrialStatus::failed);
  CHECK(history_status(TrialState::queued) == search::TrialStatus::running);
}

TEST_CASE("terminal decision: a death by signal is said once, with the signal's name") {
  // The local backend's message "killed by signal 12 (User defined signal 2)" was appended
  // to the verdict "killed by signal 12": "killed by signal 12 (killed by signal 12 (...))".
  TerminalFacts f;
  f.state = TrialState::running;
  f.max_retries = 1;
  f.metric = "acc";
  auto ev = exited(128 + 12, 12);
  ev.message = "killed by signal 12 (User defined signal 2)";
  auto d = decide_terminal(ev, f);
  CHECK(d.outcome == Outcome::failed);
  CHECK(d.why == "killed by signal 12 (User defined signal 2)");
  // A backend's own words that say more are kept in parentheses, as before.
  ev.message = "out of memory (OUT_OF_MEMORY)";
  d = decide_terminal(ev, f);
  CHECK(d.why == "killed by signal 12 (out of memory (OUT_OF_MEMORY))");
}
