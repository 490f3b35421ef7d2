// report_stats_test.cpp — the report's small computations on hand-computed cases.
#include <catch2/catch.hpp>

#include "report/report_stats.hpp"

using namespace dlsweep::report;

TEST_CASE("pareto_front keeps the points no other point beats on both time and compute") {
  // (number, time, compute): 1 dominates 2; 3 and 4 are equal (both kept); 5 is fastest.
  std::vector<ParetoPoint> p = {{1, 10, 100}, {2, 12, 150}, {3, 8, 200}, {4, 8, 200}, {5, 5, 400}, {6, 9, 300}};
  CHECK(pareto_front(p) == std::vector<std::int64_t>{1, 3, 4, 5});
  CHECK(pareto_front({}).empty());
  CHECK(pareto_front({{7, NAN, 1}, {8, 2, 3}}) == std::vector<std::int64_t>{8});
  // Same compute, slower: dominated.
  CHECK(pareto_front({{1, 5, 10}, {2, 6, 10}}) == std::vector<std::int64_t>{1});
}

TEST_CASE("correlation_ratio is the between-group share of the variance") {
  using nlohmann::json;
  // Groups a: {1, 3} (mean 2), b: {5, 7} (mean 6); grand mean 4.
  // Total SS = 9+1+1+9 = 20; between = 2*(2-4)^2 + 2*(6-4)^2 = 16; eta^2 = 0.8.
  std::vector<ImportanceInput> rows = {{json("a"), 1}, {json("a"), 3}, {json("b"), 5}, {json("b"), 7}};
  REQUIRE(correlation_ratio(rows));
  CHECK(*correlation_ratio(rows) == Approx(0.8));
  // A parameter that explains everything.
  CHECK(*correlation_ratio({{json(1), 1}, {json(1), 1}, {json(2), 5}}) == Approx(1.0));
  // One group, too few rows, or no variance: no answer.
  CHECK_FALSE(correlation_ratio({{json("a"), 1}, {json("a"), 2}, {json("a"), 3}}));
  CHECK_FALSE(correlation_ratio({{json("a"), 1}, {json("b"), 2}}));
  CHECK_FALSE(correlation_ratio({{json("a"), 2}, {json("b"), 2}, {json("c"), 2}}));
  // Numbers with more distinct values than bins: equal-count bins. 4 values, 2 bins:
  // {1,2} -> objectives {0, 0}, {3,4} -> {10, 10}: eta^2 = 1.
  CHECK(*correlation_ratio({{json(1), 0}, {json(2), 0}, {json(3), 10}, {json(4), 10}}, 2) == Approx(1.0));
  // Non-finite objectives are skipped, not propagated.
  CHECK(*correlation_ratio({{json("a"), 1}, {json("a"), 3}, {json("b"), 5}, {json("b"), 7}, {json("b"), NAN}}) ==
        Approx(0.8));
}

TEST_CASE("best_per_batch takes the minimum over trials that reached the target, counting the others") {
  std::vector<BatchTrial> t = {{0, 64, 500, 32000, 10.0}, {1, 64, 400, 25600, 12.0}, {2, 64, {}, {}, {}},
                               {3, 128, 300, 38400, 6.0}, {4, 32, {}, {}, {}}};
  auto b = best_per_batch(t);
  REQUIRE(b.size() == 3);
  CHECK(b[0].batch == 32);
  CHECK(b[0].trials == 1);
  CHECK(b[0].reached == 0);
  CHECK_FALSE(b[0].steps);
  CHECK(b[1].batch == 64);
  CHECK(b[1].trials == 3);
  CHECK(b[1].reached == 2);
  CHECK(*b[1].steps == 400);
  CHECK(*b[1].steps_trial == 1);
  CHECK(*b[1].time_s == 10.0);  // best time from a different trial than best steps
  CHECK(*b[1].time_trial == 0);
  CHECK(*b[2].samples == 38400);
}

TEST_CASE("scaling_over_ranks: efficiency relative to the smallest rank count of each shape") {
  std::vector<ThroughputTrial> t = {{256, 1, 1, 1000}, {256, 1, 1, 1200}, {256, 2, 1, 1980}, {256, 4, 1, 3300},
                                    {512, 2, 1, 2000}, {512, 4, 1, 3000}, {256, 1, 2, 0}};
  auto s = scaling_over_ranks(t);
  REQUIRE(s.size() == 2);  // the zero-throughput trial is skipped
  CHECK(s[0].batch == 256);
  REQUIRE(s[0].points.size() == 3);
  CHECK(s[0].points[0].samples_per_s == Approx(1100));
  CHECK(s[0].points[0].trials == 2);
  CHECK(*s[0].points[1].efficiency == Approx(1980.0 / (2 * 1100.0)));
  CHECK(*s[0].points[2].speedup == Approx(3.0));
  CHECK(*s[0].points[2].efficiency == Approx(0.75));
  // Base 2 ranks: 4 ranks at 1.5x the throughput is 75% efficient.
  CHECK(*s[1].points[1].efficiency == Approx(0.75));
}

TEST_CASE("rate_importance: one trial per value is not rated; two per group on average are") {
  using nlohmann::json;
  // 8 trials, each its own value: eta^2 would be exactly 1 whatever the objective.
  std::vector<ImportanceInput> each;
  for (int i = 0; i < 8; ++i) each.push_back({json(0.01 * (i + 1)), 0.9 + 0.01 * ((i * 5) % 8)});
  CHECK(*correlation_ratio(each) == Approx(1.0));
  auto r = rate_importance(each);
  CHECK_FALSE(r.eta2);
  CHECK(r.trials == 8);
  CHECK(r.groups == 8);
  CHECK(r.chance == Approx(1.0));
  CHECK_THAT(r.why_not, Catch::Contains("8 trials in 8 groups") && Catch::Contains("needs at least 16 trials"));
  // Numbers with more distinct values than bins: 12 values in 8 bins still fall short of 16.
  std::vector<ImportanceInput> twelve;
  for (int i = 0; i < 12; ++i) twelve.push_back({json(i), static_cast<double>(i % 3)});
  CHECK_FALSE(rate_importance(twelve).eta2);
  CHECK(rate_importance(twelve).groups == 8);
  // The 4-row example above: 2 groups of 2, rated 0.8; no effect would give (2-1)/(4-1) on average.
  auto g = rate_importance({{json("a"), 1}, {json("a"), 3}, {json("b"), 5}, {json("b"), 7}});
  REQUIRE(g.eta2);
  CHECK(*g.eta2 == Approx(0.8));
  CHECK(g.chance == Approx(1.0 / 3.0));
  CHECK(g.why_not.empty());
  // One value only, or no variance.
  CHECK_THAT(rate_importance({{json("a"), 1}, {json("a"), 2}}).why_not, Catch::Contains("share one value"));
  CHECK_THAT(rate_importance({{json("a"), 2}, {json("a"), 2}, {json("b"), 2}, {json("b"), 2}}).why_not,
             Catch::Contains("does not vary"));
}

TEST_CASE("thin_by_attempt keeps every attempt's first and last point, and all points under the cap") {
  CHECK(thin_by_attempt({}, 5).empty());
  CHECK(thin_by_attempt({0, 0, 1}, 5) == std::vector<std::size_t>{0, 1, 2});  // under the cap: all
  // 10 points, attempts 0 (0..3) and 1 (4..9), cap 3: evenly spaced 0, 4, 9 plus the ends 3 and 4.
  CHECK(thin_by_attempt({0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, 3) == std::vector<std::size_t>{0, 3, 4, 9});
  // One attempt: the plain evenly spaced thinning, first and last kept.
  CHECK(thin_by_attempt(std::vector<int>(9, 0), 3) == std::vector<std::size_t>{0, 4, 8});
  // A one-point attempt in the middle is kept.
  CHECK(thin_by_attempt({0, 0, 0, 0, 1, 2, 2, 2, 2, 2}, 2) == std::vector<std::size_t>{0, 3, 4, 5, 9});
}
