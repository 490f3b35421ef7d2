// Learning speedup, parallel speedup and their product; strong and weak scaling efficiency.
#include <catch2/catch.hpp>

#include "analysis/speedup.hpp"
#include "analysis_test_support.hpp"

using namespace dlsweep::analysis;
using dlsweep::analysis::testing::study_of;
using dlsweep::analysis::testing::trial;

TEST_CASE("learning speedup x parallel speedup = time-to-solution speedup") {
  // batch 100: 1100 steps in 110 s (0.1 s/step); batch 1000: 200 steps in 40 s (0.2 s/step).
  auto s = study_of({trial(0, 100, 0.1, 1, 1100, 110.0), trial(1, 1000, 0.1, 1, 200, 40.0),
                     trial(2, 10000, 0.1, 1, std::nullopt)});
  auto ls = learning_speedups(target_table(s));
  REQUIRE(ls.size() == 2);
  CHECK(ls[0].learning_speedup == 1);
  CHECK(ls[1].batch == 1000);
  CHECK(ls[1].learning_speedup == Approx(5.5));
  CHECK(*ls[1].time_speedup == Approx(2.75));
  CHECK(*ls[1].parallel_speedup == Approx(0.5));  // a step takes twice as long
}

TEST_CASE("strong scaling: fixed global batch, efficiency = speedup / (P/P0)") {
  std::vector<ThroughputPoint> p = {{"a", 1, 512, 1000}, {"a", 2, 512, 1800}, {"a", 4, 512, 3000},
                                    {"a", 4, 512, 3200},  // a second seed at 4 ranks: mean 3100
                                    {"b", 1, 512, 500}};  // one rank count only: no series
  auto t = scaling_table("ranks", p);
  REQUIRE(t.strong.size() == 3);
  CHECK(t.strong[1].resources == 2);
  CHECK(t.strong[1].speedup == Approx(1.8));
  CHECK(t.strong[1].efficiency == Approx(0.9));
  CHECK(t.strong[2].samples_per_s.n == 2);
  CHECK(t.strong[2].speedup == Approx(3.1));
  CHECK(t.strong[2].efficiency == Approx(0.775));
  CHECK(t.strong[2].per_worker_batch == 128);
}

TEST_CASE("weak scaling: fixed per-rank batch, efficiency = X(P) / (P X(1))") {
  std::vector<ThroughputPoint> p = {{"a", 1, 128, 1000}, {"a", 2, 256, 1900}, {"a", 8, 1024, 6400}};
  auto t = scaling_table("ranks", p);
  REQUIRE(t.weak.size() == 3);
  CHECK(t.weak[1].batch == 256);
  CHECK(t.weak[1].efficiency == Approx(0.95));
  CHECK(t.weak[2].efficiency == Approx(0.8));
  CHECK(t.strong.empty());  // no two rank counts at one global batch
  auto th = scaling_table("threads", p);
  CHECK(th.weak.empty());  // weak scaling is a rank notion
}

TEST_CASE("scaling_tables: a study with one rank count has no ranks table") {
  auto a = trial(0, 256, 0.1, 1, 10);
  a.samples_per_s = 1000;
  auto b = trial(1, 256, 0.1, 1, 10);
  b.samples_per_s = 1500;
  b.threads = 2;
  b.params["threads"] = 2;
  a.params["threads"] = 1;
  auto tables = scaling_tables(study_of({a, b}));
  REQUIRE(tables.size() == 1);
  CHECK(tables[0].resource == "threads");
  REQUIRE(tables[0].strong.size() == 2);
  CHECK(tables[0].strong[1].efficiency == Approx(0.75));
}
