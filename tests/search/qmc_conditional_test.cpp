// QMC (Sobol points, scrambled or not, stratified) and conditional parameters
// (activity, order, validation).
#include <catch2/catch.hpp>

#include <set>

#include "search/conditional.hpp"
#include "search/sampler.hpp"
#include "search/sobol.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

TEST_CASE("sobol: the unscrambled sequence starts 0, 1/2, then (1/4, 3/4)", "[search][qmc]") {
  Sobol s(2, 0, false);
  const double half_unit = 0.5 * 0x1.0p-32;
  CHECK(s.coordinate(0, 0) == Approx(half_unit));
  CHECK(s.coordinate(1, 0) == Approx(0.5 + half_unit));
  CHECK(s.coordinate(1, 1) == Approx(0.5 + half_unit));
  CHECK(s.coordinate(2, 0) == Approx(0.25 + half_unit));
  CHECK(s.coordinate(2, 1) == Approx(0.75 + half_unit));
  CHECK(s.coordinate(3, 0) == Approx(0.75 + half_unit));
  CHECK(s.coordinate(3, 1) == Approx(0.25 + half_unit));
}

TEST_CASE("sobol: scrambled points keep the net's stratification", "[search][qmc]") {
  for (std::uint64_t seed : {1u, 2u, 99u}) {
    Sobol s(6, seed, true);
    // 64 points: one in each 1/64 of every coordinate, and one in each 1/8 x 1/8 cell
    // of the first two coordinates (a (0, 6, 2)-net).
    for (std::size_t d = 0; d < 6; ++d) {
      std::set<int> bins;
      for (int i = 0; i < 64; ++i) bins.insert(int(s.coordinate(i, d) * 64));
      CHECK(bins.size() == 64);
    }
    std::set<int> cells;
    for (int i = 0; i < 64; ++i) cells.insert(int(s.coordinate(i, 0) * 8) * 8 + int(s.coordinate(i, 1) * 8));
    CHECK(cells.size() == 64);
  }
  CHECK(Sobol(3, 1, true).coordinate(5, 2) != Sobol(3, 2, true).coordinate(5, 2));
}

TEST_CASE("qmc: every choice and int value is reached evenly", "[search][qmc]") {
  Space s;
  s.dims = {dim_choice("opt", {"a", "b", "c", "d"}), dim_int("bs", 64, 512, 64)};
  auto sampler = std::move(*make_sampler("qmc", s, 3));
  std::map<std::string, int> opt;
  std::map<std::int64_t, int> bs;
  for (int i = 0; i < 64; ++i) {
    auto p = *sampler->next(i, History{});
    ++opt[p["opt"].get<std::string>()];
    ++bs[p["bs"].get<std::int64_t>()];
  }
  CHECK(opt.size() == 4);
  for (auto& [k, n] : opt) CHECK(n == 16);
  CHECK(bs.size() == 8);
  for (auto& [k, n] : bs) CHECK(n == 8);
}

TEST_CASE("conditional: activity, order and dropping", "[search][conditional]") {
  Space s;
  Dimension child = dim_log("trust", 1e-4, 1e-2);
  child.when = {{"optimizer", {"lars", "larc"}}};
  Dimension grandchild = dim_choice("clip", {true, false});
  grandchild.when = {{"trust", {0.001}}};  // invalid (continuous parent), but order still works
  s.dims = {child, dim_choice("optimizer", {"sgd", "lars", "larc"})};
  const auto order = sampling_order(s);
  REQUIRE(order.size() == 2);
  CHECK(order[0] == 1);  // the parent first
  CHECK(order[1] == 0);
  Params p = {{"optimizer", "sgd"}, {"trust", 0.001}};
  drop_inactive(s, p);
  CHECK_FALSE(p.contains("trust"));
  Params q = {{"optimizer", "larc"}, {"trust", 0.001}};
  drop_inactive(s, q);
  CHECK(q.contains("trust"));
}

TEST_CASE("conditional: validation names unknown params, impossible values and cycles", "[search][conditional]") {
  auto errors_of = [](Space s) { return check_conditions(s); };
  Space unknown;
  Dimension a = dim_log("trust", 1e-4, 1e-2);
  a.when = {{"optimiser", {"lars"}}};
  unknown.dims = {dim_choice("optimizer", {"sgd", "lars"}), a};
  auto e = errors_of(unknown);
  REQUIRE(e.size() == 1);
  CHECK(e[0].key == "trust.when.optimiser");
  CHECK(e[0].what.find("unknown parameter") != std::string::npos);

  Space impossible = unknown;
  impossible.dims[1].when = {{"optimizer", {"adam"}}};
  e = errors_of(impossible);
  REQUIRE(e.size() == 1);
  CHECK(e[0].what.find("can never be") != std::string::npos);

  Space cycle;
  Dimension x = dim_choice("x", {1, 2}), y = dim_choice("y", {1, 2});
  x.when = {{"y", {1}}};
  y.when = {{"x", {1}}};
  cycle.dims = {x, y};
  e = errors_of(cycle);
  REQUIRE_FALSE(e.empty());
  CHECK(e[0].what.find("cycle") != std::string::npos);

  Space self;
  Dimension z = dim_choice("z", {1, 2});
  z.when = {{"z", {1}}};
  self.dims = {z};
  CHECK_FALSE(errors_of(self).empty());

  Space fixed_ok;
  fixed_ok.fixed = {{"optimizer", "lars"}};
  Dimension t = dim_log("trust", 1e-4, 1e-2);
  t.when = {{"optimizer", {"lars"}}};
  fixed_ok.dims = {t};
  CHECK(errors_of(fixed_ok).empty());
}
