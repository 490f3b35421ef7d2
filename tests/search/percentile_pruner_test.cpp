// median/percentile as Optuna's MedianPruner/PercentilePruner (optuna/pruners/_percentile.py),
// by cases worked from its code: the completed trials' value AT the trial's position (not their
// best by then), startup_trials counting COMPLETE trials whatever they reached, warmup, interval
// (Optuna's interval_steps, first report of each interval), min_trials (n_min_trials), NaN;
// and the best_by_then variant kept under `compare`. Parity with Optuna itself on recorded
// curves, through a real sweep: python/tests/test_pruner_parity.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "search/percentile_pruner.hpp"
#include "search/pruner.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

std::unique_ptr<Pruner> make(const std::string& kind, json options) {
  auto p = make_pruner(kind, options);
  INFO(kind << " " << options.dump());
  REQUIRE(p.has_value());
  return std::move(*p);
}

/// A curve reported at steps 0, 1, 2, ... (Optuna's report(value, step)).
std::vector<CurvePoint> steps(const std::vector<double>& values) {
  std::vector<CurvePoint> out;
  for (std::size_t i = 0; i < values.size(); ++i) out.push_back({double(i), double(i), 0, double(i), values[i]});
  return out;
}

TrialRecord done(std::int64_t n, const std::vector<double>& values) {
  TrialRecord t = complete(n, json::object(), values.back());
  t.curve = steps(values);
  return t;
}

TrialRecord running(std::int64_t n, const std::vector<double>& values) {
  TrialRecord t;
  t.number = n;
  t.curve = steps(values);
  return t;
}

}  // namespace

TEST_CASE("median compares with the completed trials' value at the same step, not their best by then",
          "[search][pruner][median][optuna]") {
  // Five completed curves that peak at step 1 and fall back at step 2: at step 2 their values are
  // 0.50..0.54 (median 0.52), their bests by then 0.90..0.94 (median 0.92).
  History h;
  for (int i = 0; i < 5; ++i) h.trials.push_back(done(i, {0.1, 0.9 + 0.01 * i, 0.5 + 0.01 * i}));
  auto median = make("median", {{"by", "step"}});
  const auto d = median->judge(running(9, {0.1, 0.2, 0.6}), h);
  CHECK_FALSE(d.prune);  // 0.6 beats the 0.52 they had at step 2 (Optuna keeps it)
  const auto old = make("median", {{"by", "step"}, {"compare", "best_by_then"}})->judge(running(9, {0.1, 0.2, 0.6}), h);
  CHECK(old.prune);  // against their best by then, 0.92: dlsweep's earlier rule prunes it
  CHECK_THAT(old.reason, Catch::Contains("by then"));
  const auto worse = median->judge(running(9, {0.1, 0.2, 0.51}), h);
  CHECK(worse.prune);
  CHECK_THAT(worse.reason, Catch::Contains("median 0.52 of 5 completed trial(s) reported at step 2"));
}

TEST_CASE("the trial's own side is its best over every report so far", "[search][pruner][median][optuna]") {
  History h;
  for (int i = 0; i < 5; ++i) h.trials.push_back(done(i, {0.5, 0.6, 0.7}));
  auto median = make("median", {{"by", "step"}});
  CHECK_FALSE(median->judge(running(9, {0.8, 0.1, 0.1}), h).prune);  // 0.8 at step 0 carries
  h.maximize = false;  // minimise: the lowest so far
  CHECK_FALSE(median->judge(running(9, {0.2, 0.9, 0.9}), h).prune);
  CHECK(median->judge(running(9, {0.9, 0.9, 0.9}), h).prune);
}

TEST_CASE("startup_trials counts COMPLETE trials, whatever step they reached; defaults are Optuna's",
          "[search][pruner][median][optuna]") {
  History h;
  for (int i = 0; i < 4; ++i) h.trials.push_back(done(i, {0.9}));  // four completed, each reported step 0 only
  TrialRecord pruned_one = done(4, {0.95, 0.95});
  pruned_one.status = TrialStatus::pruned;  // not COMPLETE: does not count
  h.trials.push_back(pruned_one);
  auto median = make("median", {{"by", "step"}});  // n_startup_trials 5, n_warmup_steps 0
  CHECK_FALSE(median->judge(running(9, {0.1}), h).prune);  // 4 < 5 COMPLETE
  h.trials.push_back(done(5, {0.9, 0.9, 0.9}));
  CHECK(median->judge(running(9, {0.1}), h).prune);  // step 0 judged: warmup 0 by default
  // At step 1 only trial 5 reported: n_min_trials 1 is enough.
  CHECK(median->judge(running(9, {0.1, 0.1}), h).prune);
  // At step 3 nobody did: nothing to compare with, no prune.
  CHECK_FALSE(median->judge(running(9, {0.1, 0.1, 0.1, 0.1}), h).prune);
  CHECK(pruner_default_warmup("median") == 0);
  CHECK(pruner_default_warmup("percentile") == 0);
}

TEST_CASE("min_trials: completed trials that reported at this step", "[search][pruner][percentile][optuna]") {
  History h;
  for (int i = 0; i < 5; ++i) h.trials.push_back(done(i, {0.9}));
  h.trials.push_back(done(5, {0.9, 0.9}));
  auto p = make("percentile", {{"by", "step"}, {"percentile", 50}, {"min_trials", 2}});
  CHECK(p->judge(running(9, {0.1}), h).prune);            // 6 reported at step 0
  CHECK_FALSE(p->judge(running(9, {0.1, 0.1}), h).prune);  // 1 at step 1 < 2
}

TEST_CASE("interval: judged only at the first report of each interval after warmup",
          "[search][pruner][median][optuna]") {
  History h;
  for (int i = 0; i < 5; ++i) h.trials.push_back(done(i, std::vector<double>(12, 0.9)));
  auto p = make("median", {{"by", "step"}, {"warmup", 2}, {"interval", 3}});
  std::vector<int> judged;
  for (int n = 1; n <= 12; ++n)
    if (p->judge(running(9, std::vector<double>(std::size_t(n), 0.1)), h).prune) judged.push_back(n - 1);
  CHECK(judged == std::vector<int>{2, 5, 8, 11});  // warmup + k·interval
  // Reports every other step: step 3 is the first report of the interval [2, 5), step 5 of [5, 8).
  TrialRecord sparse = running(9, {0.1});
  sparse.curve = {{1, 1, 0, 1, 0.1}, {3, 3, 0, 3, 0.1}};
  CHECK(p->judge(sparse, h).prune);
  sparse.curve.push_back({4, 4, 0, 4, 0.1});
  CHECK_FALSE(p->judge(sparse, h).prune);  // step 3 was already judged in this interval
  sparse.curve.push_back({6, 6, 0, 6, 0.1});
  CHECK(p->judge(sparse, h).prune);
  CHECK(first_in_interval(0, {0}, 0, 1));
  CHECK_FALSE(first_in_interval(1.5, {0.5, 1.0, 1.5}, 0, 1));  // fractional epochs: once per epoch
}

TEST_CASE("NaN: a trial of NaN reports only is pruned; NaN among the others is skipped",
          "[search][pruner][median][optuna]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  History h;
  for (int i = 0; i < 5; ++i) h.trials.push_back(done(i, {0.5 + 0.1 * i}));
  auto median = make("median", {{"by", "step"}});
  const auto d = median->judge(running(9, {nan}), h);
  CHECK(d.prune);
  CHECK_THAT(d.reason, Catch::Contains("NaN"));
  h.trials[4].curve[0].value = nan;  // others 0.5, 0.6, 0.7, 0.8: median 0.65
  CHECK(median->judge(running(9, {0.64}), h).prune);
  CHECK_FALSE(median->judge(running(9, {0.66}), h).prune);
}

TEST_CASE("percentile: Optuna's range [0, 100]; compare and interval are checked", "[search][pruner][percentile]") {
  History h;
  for (int i = 0; i < 5; ++i) h.trials.push_back(done(i, {double(i + 1)}));
  // percentile 100 keeps a trial unless it is worse than every completed one (Optuna's meaning).
  auto all = make("percentile", {{"by", "step"}, {"percentile", 100}});
  CHECK_FALSE(all->judge(running(9, {1.5}), h).prune);
  CHECK(all->judge(running(9, {0.5}), h).prune);
  auto top = make("percentile", {{"by", "step"}, {"percentile", 0}});  // only the best goes on
  CHECK(top->judge(running(9, {4.9}), h).prune);
  CHECK_FALSE(top->judge(running(9, {5.0}), h).prune);
  for (auto [key, value] : {std::pair<std::string, json>{"percentile", 101}, {"compare", "best"}, {"interval", 0},
                            {"min_trials", 0}}) {
    json o = {{"percentile", 50}};
    o[key] = value;
    auto r = make_pruner("percentile", o);
    INFO(key);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().front().key == key);
  }
}

TEST_CASE("by samples or wall_s the default is best_by_then, judged on every report", "[search][pruner][median]") {
  History h;  // completed trials report at 10, 20, 30 s; the trial at 15 s and 25 s
  for (int i = 0; i < 5; ++i) {
    TrialRecord t = done(i, {0.5, 0.6, 0.7});
    for (std::size_t k = 0; k < 3; ++k) t.curve[k].wall_s = 10.0 * double(k + 1);
    h.trials.push_back(t);
  }
  TrialRecord t = running(9, {0.4, 0.55});
  t.curve[0].wall_s = 15;
  t.curve[1].wall_s = 25;
  CHECK(make("median", {{"by", "wall_s"}})->judge(t, h).prune);  // 0.55 < their 0.6 by 25 s
  CHECK_FALSE(make("median", {{"by", "wall_s"}, {"compare", "same_point"}})->judge(t, h).prune);  // nobody at 25 s
}
