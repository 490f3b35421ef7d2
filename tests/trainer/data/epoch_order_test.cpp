#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "trainer/data/epoch_order.hpp"
#include "trainer/rng.hpp"

using namespace dlsweep::trainer;

TEST_CASE("SplitMix64 gives the published sequence", "[rng]") {
  // Reference values of splitmix64 seeded with 0 (Vigna's splitmix64.c).
  SplitMix64 r(0);
  CHECK(r.next() == 0xE220A8397B1DCDAFULL);
  CHECK(r.next() == 0x6E789E6AA1B965F4ULL);
  CHECK(r.next() == 0x06C45D188009454FULL);
}

TEST_CASE("bounded and normal draws are in range and plausible", "[rng]") {
  SplitMix64 r(9);
  std::vector<int> hist(7, 0);
  for (int i = 0; i < 70000; ++i) ++hist[static_cast<std::size_t>(r.below(7))];
  for (int h : hist) CHECK(std::abs(h - 10000) < 500);
  double sum = 0, sq = 0;
  for (int i = 0; i < 100000; ++i) {
    double x = r.normal();
    sum += x;
    sq += x * x;
  }
  CHECK(sum / 100000 == Approx(0.0).margin(0.02));
  CHECK(sq / 100000 == Approx(1.0).epsilon(0.02));
}

TEST_CASE("epoch order is a permutation fixed by (seed, epoch)", "[data][shuffle]") {
  std::vector<std::uint32_t> a(1000), b(1000), c(1000), d(1000);
  data::epoch_order(5, 0, a);
  data::epoch_order(5, 0, b);
  data::epoch_order(5, 1, c);
  data::epoch_order(6, 0, d);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != d);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint32_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0u);
  CHECK(sorted == iota);
  CHECK(a != iota);
}
