// Pareto utilities: domination, constrained domination, fronts, crowding, hypervolume and
// the greedy hypervolume subset, on hand-checked cases.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "search/pareto.hpp"

using namespace dlsweep::search;

TEST_CASE("pareto: domination is strict in one coordinate", "[search][pareto]") {
  CHECK(dominates({1, 2}, {1, 3}));
  CHECK(dominates({0, 0}, {1, 1}));
  CHECK_FALSE(dominates({1, 2}, {1, 2}));
  CHECK_FALSE(dominates({1, 3}, {2, 2}));
  CHECK_FALSE(dominates({2, 2}, {1, 3}));
}

TEST_CASE("pareto: constrained domination puts feasible first, then less violation", "[search][pareto]") {
  CHECK(total_violation({-1, 0, 2, 0.5}) == 2.5);
  CHECK(total_violation({}) == 0);
  CHECK(constrained_dominates({9, 9}, 0, {0, 0}, 1));   // feasible beats infeasible, whatever the values
  CHECK_FALSE(constrained_dominates({0, 0}, 1, {9, 9}, 0));
  CHECK(constrained_dominates({9, 9}, 0.5, {0, 0}, 2));  // both infeasible: smaller violation
  CHECK_FALSE(constrained_dominates({1, 1}, 0, {1, 1}, 0));
  CHECK(constrained_dominates({0, 1}, 0, {1, 1}, 0));
}

TEST_CASE("pareto: non-dominated sort gives the fronts in index order", "[search][pareto]") {
  const std::vector<Losses> pts = {{1, 5}, {2, 2}, {5, 1}, {3, 3}, {6, 6}, {2, 4}};
  const auto fronts = non_dominated_sort(pts);
  REQUIRE(fronts.size() == 3);
  CHECK(fronts[0] == std::vector<std::size_t>{0, 1, 2});
  CHECK(fronts[1] == std::vector<std::size_t>{3, 5});
  CHECK(fronts[2] == std::vector<std::size_t>{4});
  // With violations: the infeasible point of the first front falls behind every feasible one.
  const auto constrained = non_dominated_sort(pts, {0, 3, 0, 0, 0, 0});
  CHECK(constrained[0] == std::vector<std::size_t>{0, 2, 3, 5});
  CHECK(constrained[1] == std::vector<std::size_t>{4});
  CHECK(constrained.back() == std::vector<std::size_t>{1});
  CHECK(non_dominated_sort({}).empty());
}

TEST_CASE("pareto: crowding distance: boundaries infinite, inner by normalised gap", "[search][pareto]") {
  const std::vector<Losses> pts = {{0, 4}, {1, 2}, {3, 1}, {4, 0}};
  const auto d = crowding_distance(pts, {0, 1, 2, 3});
  CHECK(std::isinf(d[0]));
  CHECK(std::isinf(d[3]));
  CHECK(d[1] == Approx(3.0 / 4 + 3.0 / 4));
  CHECK(d[2] == Approx(3.0 / 4 + 2.0 / 4));
  CHECK(std::isinf(crowding_distance(pts, {1, 2})[0]));
}

TEST_CASE("pareto: hypervolume in 2 and 3 objectives", "[search][pareto]") {
  CHECK(hypervolume({{1, 1}}, {2, 2}) == Approx(1));
  // Staircase: (0,2),(1,1),(2,0) against (3,3): 3*1 + 2*1 + 1*1 = 6.
  CHECK(hypervolume({{0, 2}, {1, 1}, {2, 0}}, {3, 3}) == Approx(6));
  // A dominated point and one outside the reference add nothing.
  CHECK(hypervolume({{0, 2}, {1, 1}, {2, 0}, {2, 2}, {0, 5}}, {3, 3}) == Approx(6));
  CHECK(hypervolume({}, {1, 1}) == 0);
  // 3-D: one box, and two overlapping boxes: 8 + 8 - 1 = 15 with the union computed exactly.
  CHECK(hypervolume({{0, 0, 0}}, {2, 2, 2}) == Approx(8));
  CHECK(hypervolume({{0, 0, 1}, {1, 1, 0}}, {2, 2, 2}) == Approx(4 + 2 - 1));
  CHECK(hypervolume({{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, {2, 2, 2}) == Approx(4));
}

TEST_CASE("pareto: greedy hypervolume subset picks the largest contributions", "[search][pareto]") {
  const std::vector<Losses> pts = {{0, 3}, {1, 1}, {3, 0}, {1.1, 1.1}};
  const auto pick = select_by_hypervolume(pts, 2, {4, 4});
  REQUIRE(pick.size() == 2);
  CHECK(pick[0] == 1);  // (1,1): 9, the largest box alone
  CHECK(select_by_hypervolume(pts, 9, {4, 4}).size() == 4);
}

TEST_CASE("pareto: a trial's losses follow the directions", "[search][pareto]") {
  History h;
  h.directions = {true, false};
  TrialRecord t;
  t.status = TrialStatus::complete;
  t.values = {0.9, 12};
  CHECK(*to_losses(t, h) == Losses{-0.9, 12});
  t.values = {0.9};
  CHECK_FALSE(to_losses(t, h));
  t.values = {std::nan(""), 1};
  CHECK_FALSE(to_losses(t, h));
  History single;
  single.maximize = false;
  t.value = 3;
  CHECK(*to_losses(t, single) == Losses{3});
}
