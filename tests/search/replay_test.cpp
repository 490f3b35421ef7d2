// search/replay: recorded curves replayed under real pruners (make_pruner), by hand-computed
// cases: pruning that keeps the best, pruning that loses it, a recorded PRUNED trial a
// replayed pruner would keep ("unknown beyond"), and the median pruner reproducing a
// recorded sequential sweep's own decisions.
#include <catch2/catch.hpp>

#include "search/replay.hpp"
#include "search/replay_sampler.hpp"

using namespace dlsweep::search;

namespace {

/// A trial reporting `values` at epochs 1, 2, ... (wall_s = 10 s per epoch, 100 samples per epoch).
RecordedTrial trial(std::int64_t number, std::vector<double> values, TrialStatus status = TrialStatus::complete) {
  RecordedTrial t;
  t.number = number;
  t.params = Params{{"x", number}};
  t.status = status;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double e = double(i + 1);
    t.curve.push_back(CurvePoint{e * 10, e, e * 100, e * 10, values[i]});
  }
  return t;
}

std::unique_ptr<Pruner> pruner(const std::string& kind, const nlohmann::json& options) {
  auto p = make_pruner(kind, options);
  REQUIRE(p.has_value());
  return std::move(*p);
}

}  // namespace

TEST_CASE("replay: a pruner that stops only the poor trials keeps the best, at less compute") {
  ReplayInput in;
  in.maximize = true;
  in.trials = {trial(0, {0.70, 0.80, 0.85, 0.88}), trial(1, {0.40, 0.45, 0.50, 0.52}),
               trial(2, {0.75, 0.85, 0.90, 0.91}), trial(3, {0.30, 0.35, 0.40, 0.42})};
  auto p = pruner("threshold", {{"lower", 0.6}});
  const auto o = replay(in, *p);
  // Trials 1 and 3 are below 0.6 at their first report (epoch 1): 10 s each instead of 40.
  REQUIRE(o.trials.size() == 4);
  CHECK(o.trials[1].replayed == TrialStatus::pruned);
  CHECK(o.trials[1].at == 1);
  CHECK(o.trials[1].compute_replayed == 10);
  CHECK(o.trials[3].replayed == TrialStatus::pruned);
  CHECK(o.trials[0].replayed == TrialStatus::complete);
  CHECK(o.compute_recorded == 160);
  CHECK(o.compute_replayed == 100);
  CHECK(o.same_best());
  CHECK(*o.best_replayed == 2);
  CHECK(*o.best_replayed_value == 0.91);
  CHECK(o.compute_to_best == 90);  // 40 + 10 + 40
  CHECK(o.pruned_replayed == 2);
  CHECK(o.unknown == 0);
  CHECK(o.differ == 2);
  CHECK(summary_line(o, "acc") == "threshold: the same best (trial 2, acc 0.91) at 62% of the compute; pruned 2 of 4");
}

TEST_CASE("replay: a pruner that stops a slow starter loses the best, and says by how much") {
  ReplayInput in;
  in.maximize = true;
  // Trial 2 starts poorly and ends best: the threshold stops it at epoch 1.
  in.trials = {trial(0, {0.70, 0.80, 0.85, 0.88}), trial(1, {0.65, 0.70, 0.72, 0.74}),
               trial(2, {0.50, 0.80, 0.95, 0.97})};
  auto p = pruner("threshold", {{"lower", 0.6}});
  const auto o = replay(in, *p);
  CHECK(*o.best_recorded == 2);
  CHECK(*o.best_recorded_value == 0.97);
  CHECK(*o.best_replayed == 0);
  CHECK(*o.best_replayed_value == 0.88);
  CHECK_FALSE(o.same_best());
  CHECK(o.trials[2].replayed == TrialStatus::pruned);
  CHECK(o.trials[2].reason.find("below the lower bound 0.6") != std::string::npos);
  CHECK(o.compute_replayed == 90);
  CHECK(summary_line(o, "acc") ==
        "threshold: best would be trial 0 (acc 0.88, 0.09 below the recorded best, trial 2) at 75% of the compute; "
        "pruned 1 of 3");
}

TEST_CASE("replay: a recorded PRUNED trial that the replayed pruner would keep is unknown beyond its record") {
  ReplayInput in;
  in.maximize = false;  // a loss
  // Trial 1 was pruned at epoch 2 in the recorded sweep: its curve stops there.
  in.trials = {trial(0, {1.0, 0.8, 0.6}), trial(1, {1.2, 0.9}, TrialStatus::pruned), trial(2, {0.9, 0.7, 0.5})};
  auto none = pruner("none", nullptr);
  const auto o = replay(in, *none);
  CHECK(o.unknown == 1);
  CHECK(o.trials[1].unknown);
  CHECK(o.trials[1].at == 2);
  CHECK(o.trials[1].replayed == TrialStatus::pruned);  // never made the best with values it never reported
  CHECK_FALSE(o.trials[1].value.has_value());
  CHECK(o.trials[1].compute_replayed == o.trials[1].compute_recorded);  // as recorded: a lower bound
  CHECK(o.pruned_recorded == 1);
  CHECK(o.pruned_replayed == 0);
  CHECK(o.differ == 1);
  CHECK(*o.best_replayed == 2);
  CHECK(o.same_best());
  CHECK(summary_line(o, "loss") ==
        "none: the same best (trial 2, loss 0.5) at 100% of the compute; pruned 0 of 3; 1 unknown beyond where the "
        "recorded sweep stopped it");
}

TEST_CASE("replay: the median pruner on a one-at-a-time sweep it ran itself makes the same decisions") {
  // What the engine would record with {kind: median, startup_trials: 2, warmup: 1}: trials 0
  // and 1 complete; trial 2 (behind the median at epoch 1) stops there, its curve ending at
  // its report of epoch 1; trial 3 (ahead) completes.
  ReplayInput in;
  in.maximize = false;
  in.trials = {trial(0, {1.0, 1.0, 1.0}), trial(1, {2.0, 2.0, 2.0}), trial(2, {3.0}, TrialStatus::pruned),
               trial(3, {1.2, 1.2, 1.2})};
  auto p = pruner("median", {{"startup_trials", 2}, {"warmup", 1}});
  const auto o = replay(in, *p);
  CHECK(o.differ == 0);
  CHECK(o.unknown == 0);
  CHECK(o.trials[2].replayed == TrialStatus::pruned);
  CHECK(o.trials[2].at == 1);
  CHECK(o.trials[2].reason.find("median 1.5") != std::string::npos);
  CHECK(o.trials[3].replayed == TrialStatus::complete);
  CHECK(o.compute_replayed == o.compute_recorded);
}

TEST_CASE("curve_value: best or last report, NaN skipped") {
  std::vector<CurvePoint> c = {{1, 1, 1, 1, 0.5}, {2, 2, 2, 2, 0.9}, {3, 3, 3, 3, std::nan("")}, {4, 4, 4, 4, 0.7}};
  CHECK(*curve_value(c, 4, true, false) == 0.9);
  CHECK(*curve_value(c, 4, false, false) == 0.5);
  CHECK(*curve_value(c, 4, true, true) == 0.7);
  CHECK(*curve_value(c, 2, true, true) == 0.9);
  CHECK_FALSE(curve_value(c, 0, true, false).has_value());
}

namespace {

/// x in {1, 2, 3, 4} (a choice), one recorded trial each; loss = 1 / x at epochs 1..3 but x = 3, the best, starts worst.
Space grid_space() {
  Space s;
  Dimension d;
  d.name = "x";
  d.kind = Dimension::Kind::choice;
  d.choices = {1, 2, 3, 4};
  s.dims.push_back(d);
  return s;
}

ReplayInput grid_study() {
  ReplayInput in;
  in.maximize = false;
  in.trials = {trial(0, {1.0, 1.0, 1.0}), trial(1, {0.5, 0.5, 0.5}), trial(2, {2.0, 0.6, 0.2}), trial(3, {0.25, 0.25, 0.25})};
  for (auto& t : in.trials) t.params = Params{{"x", t.number + 1}};
  return in;
}

}  // namespace

TEST_CASE("replay_sampler: the grid sampler proposes the recorded points in order and finds the best where it is") {
  const auto in = grid_study();
  const auto space = grid_space();
  REQUIRE(covers_grid(in.trials, space).has_value());
  auto grid = make_sampler("grid", space, 0);
  REQUIRE(grid.has_value());
  auto none = pruner("none", nullptr);
  const auto r = replay_sampler(in, space, **grid, *none, 4);
  REQUIRE(r.proposals.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(r.proposals[i].trial == std::int64_t(i));
    CHECK(r.proposals[i].exact);
  }
  CHECK(*r.recorded_best == 2);
  CHECK(*r.found_at == 2);
  CHECK(r.compute_to_found == 90);  // three trials of 30 s
  CHECK(r.outcome.compute_recorded == 120);
  CHECK(sampler_summary_line(r, "loss") ==
        "grid: the recorded best (trial 2, loss 0.2) found at proposal 3 of 4, after 75% of the recorded compute; 100% "
        "of the recorded compute in all; pruned 0 of 4");
}

TEST_CASE("replay_sampler: with a pruner that stops the slow starter, the sampler never finds the best") {
  const auto in = grid_study();
  const auto space = grid_space();
  auto grid = make_sampler("grid", space, 0);
  auto thr = pruner("threshold", {{"upper", 1.5}});  // loss above 1.5: trial 2 at epoch 1
  const auto r = replay_sampler(in, space, **grid, *thr, 4);
  CHECK_FALSE(r.found_at.has_value());
  CHECK(*r.outcome.best_replayed == 3);
  CHECK(r.outcome.pruned_replayed == 1);
}

TEST_CASE("replay_sampler: off-grid proposals map to the nearest recorded point; a grid with holes is refused") {
  const auto in = grid_study();
  const auto space = grid_space();
  auto [at, exact] = nearest_trial(in.trials, space, Params{{"x", 2.2}});
  CHECK(in.trials[at].number == 1);
  CHECK_FALSE(exact);
  auto [at3, exact3] = nearest_trial(in.trials, space, Params{{"x", 3}});
  CHECK(in.trials[at3].number == 2);
  CHECK(exact3);
  auto holes = in.trials;
  holes.erase(holes.begin() + 1);
  auto no = covers_grid(holes, space);
  REQUIRE_FALSE(no.has_value());
  CHECK(no.error() == "1 of the grid's 4 points have no finished trial, e.g. {\"x\":2}");
  Space continuous;
  Dimension u;
  u.name = "lr";
  u.kind = Dimension::Kind::uniform;
  u.low = 0.1;
  u.high = 1;
  continuous.dims.push_back(u);
  auto c = covers_grid(in.trials, continuous);
  REQUIRE_FALSE(c.has_value());
  CHECK(c.error().find("`lr` is continuous") != std::string::npos);
}

namespace {

/// `t` with the recorded moments of its reports and its end (the interleaved replay's order).
RecordedTrial at(RecordedTrial t, std::vector<double> report_at, double end_at) {
  t.report_at = std::move(report_at);
  t.end_at = end_at;
  return t;
}

}  // namespace

TEST_CASE("replay in the recorded order: a trial judged before another completed is kept; one after another it is "
          "pruned") {
  // Two trials at once under {median, startup_trials: 1} (loss, minimised). Trial 0 started
  // first but reported late (at 10 and 11 s, ending at 12); trial 1 reported at 1 and 2 s and
  // ended at 3, while trial 0 had not completed: no median to compare with, so the sweep kept
  // it (recorded COMPLETE). One after another, trial 0 is complete when trial 1's first
  // report is judged: 1.9 is worse than 1.1, pruned.
  ReplayInput in;
  in.maximize = false;
  in.trials = {at(trial(0, {1.1, 0.6}), {10, 11}, 12), at(trial(1, {1.9, 1.4}), {1, 2}, 3)};
  REQUIRE(has_recorded_order(in.trials));
  auto p = pruner("median", {{"startup_trials", 1}});

  in.interleaved = true;
  const auto rec = replay(in, *p);
  CHECK(rec.interleaved);
  CHECK(rec.differ == 0);
  CHECK(rec.pruned_replayed == 0);
  CHECK(rec.trials[1].replayed == TrialStatus::complete);
  CHECK(rec.trials[1].reports_kept == 2);
  // Trial 0's reports came after trial 1 completed: 1.1 and 0.6 beat it, kept.
  CHECK(rec.trials[0].replayed == TrialStatus::complete);
  CHECK(*rec.best_replayed == 0);
  CHECK(rec.same_best());
  CHECK(rec.compute_to_best == 40);  // trial 1 (ended at 3) and trial 0: everything, by 12 s
  CHECK(rec.compute_replayed == rec.compute_recorded);

  in.interleaved = false;
  const auto seq = replay(in, *p);
  CHECK_FALSE(seq.interleaved);
  CHECK(seq.differ == 1);
  CHECK(seq.trials[1].replayed == TrialStatus::pruned);
  CHECK(seq.trials[1].at == 1);
  CHECK(seq.trials[1].reason.find("median 1.1") != std::string::npos);
  CHECK(seq.compute_to_best == 20);  // trial 0 first
}

TEST_CASE("replay in the recorded order: a trial's end enters the history at its moment; a stopped trial reports no "
          "more") {
  // {median, startup_trials: 1}, loss. Trial 1's first report (1.5 s) came before trial 0
  // ended (2.5 s): kept; its second (3 s) after: 3.0 against trial 0's 1.0, pruned there, as
  // the recorded sweep did (its record ends at epoch 2). Trial 2 (from 2.6 s) is judged
  // against trial 0 only: trial 1 stopped, so it never completes.
  ReplayInput in;
  in.maximize = false;
  in.trials = {at(trial(0, {1.0, 1.0, 1.0}), {0, 1, 2}, 2.5),
               at(trial(1, {3.0, 3.0}, TrialStatus::pruned), {1.5, 3.0}, 3.2),
               at(trial(2, {0.9, 0.8, 0.7}), {2.6, 2.7, 4}, 5)};
  in.interleaved = true;
  auto p = pruner("median", {{"startup_trials", 1}});
  const auto o = replay(in, *p);
  CHECK(o.differ == 0);
  CHECK(o.unknown == 0);
  CHECK(o.trials[1].replayed == TrialStatus::pruned);
  CHECK(o.trials[1].at == 2);
  CHECK(o.trials[1].reports_kept == 2);
  CHECK(o.trials[1].reason.find("median 1") != std::string::npos);
  CHECK(o.trials[2].replayed == TrialStatus::complete);
  CHECK(*o.best_replayed == 2);
  CHECK(o.compute_to_best == 30 + 20 + 30);
  // One after another, trial 1 is judged with trial 0 complete from its first report.
  in.interleaved = false;
  const auto seq = replay(in, *p);
  CHECK(seq.trials[1].reports_kept == 1);
  CHECK(seq.trials[1].at == 1);

  // Under none, in the recorded order: trial 1 is unknown beyond its record (epoch 2); later
  // trials see it stopped there.
  in.interleaved = true;
  auto none = pruner("none", nullptr);
  const auto n = replay(in, *none);
  CHECK(n.interleaved);
  CHECK(n.unknown == 1);
  CHECK(n.trials[1].unknown);
  CHECK(n.trials[1].at == 2);
  CHECK(n.trials[1].reports_kept == 2);
  CHECK(n.differ == 1);
}

TEST_CASE("replay in the recorded order: asha sees running trials' curves as they stood") {
  // asha {min_resource: 1, reduction_factor: 2}: at rung epoch 1 a trial is kept while it is
  // in the top half of the trials that reached epoch 1 by then, running ones included. Trial
  // 1 (0.5, better; still running until 8 s) reached epoch 1 before trial 0 (0.9) did in the
  // recorded order: trial 0 is then the worse of two, stopped. One after another trial 0 is
  // alone at its rung and kept.
  ReplayInput in;
  in.maximize = false;
  in.trials = {at(trial(0, {0.9, 0.8}), {5, 6}, 7), at(trial(1, {0.5, 0.4}), {1, 2}, 8)};
  auto p = pruner("asha", {{"min_resource", 1}, {"reduction_factor", 2}});
  in.interleaved = true;
  const auto rec = replay(in, *p);
  in.interleaved = false;
  const auto seq = replay(in, *p);
  CHECK(rec.trials[0].replayed != seq.trials[0].replayed);
  CHECK(seq.trials[0].replayed == TrialStatus::complete);
  CHECK(rec.trials[0].replayed == TrialStatus::pruned);
}

TEST_CASE("replay: without a recorded order, interleaved falls back to one after another") {
  ReplayInput in;
  in.maximize = false;
  in.trials = {at(trial(0, {1.1, 0.6}), {10, 11}, 12), trial(1, {1.9, 1.4})};
  CHECK_FALSE(has_recorded_order(in.trials));
  in.interleaved = true;
  auto p = pruner("median", {{"startup_trials", 1}});
  const auto o = replay(in, *p);
  CHECK_FALSE(o.interleaved);
  CHECK(o.trials[1].replayed == TrialStatus::pruned);
}
