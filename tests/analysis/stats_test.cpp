// stats: sample std (n - 1), type-7 percentiles.
#include <catch2/catch.hpp>

#include "analysis/stats.hpp"

using namespace dlsweep::analysis;

TEST_CASE("summarize: mean, sample std and n, by hand") {
  auto s = summarize({1, 2, 3, 4});
  CHECK(s.n == 4);
  CHECK(s.mean == Approx(2.5));
  CHECK(s.std == Approx(std::sqrt(5.0 / 3.0)));  // squares 2.25+0.25+0.25+2.25 = 5, over 3
  CHECK(summarize({7}).std == 0);
  CHECK(summarize({}).n == 0);
}

TEST_CASE("percentile interpolates between order statistics") {
  CHECK(percentile({4, 1, 3, 2}, 0.5) == Approx(2.5));
  CHECK(percentile({10, 20, 30}, 0.25) == Approx(15));
  CHECK(percentile({10, 20, 30}, 0) == 10);
  CHECK(percentile({10, 20, 30}, 1) == 30);
  CHECK(median({5, 1, 9}) == 5);
}
