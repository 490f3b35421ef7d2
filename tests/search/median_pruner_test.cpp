// The median stopping rule, by hand-computed cases: comparison by epoch (not step), best so
// far, warmup, startup count, strictness, even/odd medians, min and max objectives.
#include <catch2/catch.hpp>

#include <cmath>

#include "search/median_pruner.hpp"

using namespace dlsweep::search;

namespace {
Curve curve(std::vector<std::pair<double, double>> p) { return Curve{std::move(p)}; }
}  // namespace

TEST_CASE("best_by takes the best value up to an epoch and skips NaN") {
  Curve c = curve({{1, 0.5}, {2, 0.7}, {3, 0.6}, {4, std::nan("")}});
  CHECK_FALSE(best_by(c, 0.5, true).has_value());
  CHECK(*best_by(c, 1, true) == 0.5);
  CHECK(*best_by(c, 3, true) == 0.7);
  CHECK(*best_by(c, 4, true) == 0.7);
  CHECK(*best_by(c, 4, false) == 0.5);
}

TEST_CASE("median rule: a trial below the completed trials' median at the same epoch is pruned") {
  MedianRule rule{3, 1, true};
  // Completed trials' best by epoch 2: 0.80, 0.70, 0.90 -> median 0.80.
  std::vector<Curve> done = {curve({{1, 0.6}, {2, 0.8}, {3, 0.85}}), curve({{1, 0.7}, {2, 0.65}, {3, 0.9}}),
                             curve({{1, 0.9}, {2, 0.88}, {3, 0.95}})};
  auto v = median_rule(rule, curve({{1, 0.5}, {2, 0.79}}), done);
  CHECK(v.prune);
  CHECK(v.at == 2);
  CHECK(v.value == 0.79);
  CHECK(v.median == 0.80);
  CHECK(v.compared == 3);
  CHECK_FALSE(median_rule(rule, curve({{1, 0.5}, {2, 0.80}}), done).prune);  // equal: kept
  // Best so far counts: 0.81 at epoch 1 carries to epoch 2.
  CHECK_FALSE(median_rule(rule, curve({{1, 0.81}, {2, 0.5}}), done).prune);
}

TEST_CASE("median rule: warmup, startup count and curves that do not reach the epoch") {
  std::vector<Curve> done = {curve({{1, 0.9}}), curve({{1, 0.9}}), curve({{2, 0.9}})};
  Curve bad = curve({{1, 0.1}});
  CHECK_FALSE(median_rule({2, 2, true}, bad, done).prune);  // epoch 1 < warmup 2
  auto v = median_rule({3, 1, true}, bad, done);
  CHECK_FALSE(v.prune);  // only 2 completed curves have a value by epoch 1
  CHECK(v.compared == 2);
  CHECK(median_rule({2, 1, true}, bad, done).prune);
  CHECK_FALSE(median_rule({1, 0, true}, Curve{}, done).prune);
}

TEST_CASE("median rule: even counts average the middle pair; min objectives prune above it") {
  std::vector<Curve> done = {curve({{1, 1.0}}), curve({{1, 2.0}}), curve({{1, 3.0}}), curve({{1, 4.0}})};
  auto v = median_rule({4, 0, false}, curve({{1, 2.6}}), done);
  CHECK(v.median == 2.5);
  CHECK(v.prune);  // loss 2.6 > median 2.5
  CHECK_FALSE(median_rule({4, 0, false}, curve({{1, 2.4}}), done).prune);
  CHECK_FALSE(median_rule({4, 0, true}, curve({{1, 2.6}}), done).prune);
}

TEST_CASE("median rule compares by epoch: a small batch is not pruned for taking more steps") {
  // A batch-4096 trial completed: 1 epoch = few steps. A batch-256 trial at epoch 1 is
  // compared with what the large batch had at epoch 1, whatever the step counts.
  std::vector<Curve> done = {curve({{1, 0.70}, {2, 0.80}}), curve({{1, 0.72}, {2, 0.82}})};
  CHECK_FALSE(median_rule({2, 1, true}, curve({{1, 0.75}}), done).prune);
  CHECK(median_rule({2, 1, true}, curve({{1, 0.70}}), done).prune);
}
