// Grid sampler: completeness, the exact nested-loop order, int_range steps, exhaustion,
// and fixed params merged into every point.
#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>

#include "search/grid_sampler.hpp"
#include "search/sampler.hpp"

using namespace dlsweep::search;
using nlohmann::json;

namespace {

Dimension choice(std::string name, std::vector<json> values) {
  Dimension d;
  d.name = std::move(name);
  d.kind = Dimension::Kind::choice;
  d.choices = std::move(values);
  return d;
}

Dimension int_range(std::string name, std::int64_t lo, std::int64_t hi, std::int64_t step) {
  Dimension d;
  d.name = std::move(name);
  d.kind = Dimension::Kind::int_range;
  d.int_low = lo;
  d.int_high = hi;
  d.int_step = step;
  return d;
}

}  // namespace

TEST_CASE("cardinality counts finite values and is 0 for continuous dimensions", "[search][space]") {
  CHECK(choice("a", {1, 2, 3}).cardinality() == 3);
  CHECK(int_range("b", 1, 10, 1).cardinality() == 10);
  CHECK(int_range("b", 32, 256, 32).cardinality() == 8);
  CHECK(int_range("b", 0, 10, 3).cardinality() == 4);  // 0 3 6 9
  CHECK(int_range("b", 5, 5, 7).cardinality() == 1);
  Dimension u;
  u.kind = Dimension::Kind::uniform;
  u.low = 0;
  u.high = 1;
  CHECK(u.cardinality() == 0);
}

TEST_CASE("grid visits a 2x3 space in nested-loop order, last dimension fastest", "[search][grid]") {
  Space s;
  s.dims = {choice("opt", {"sgd", "lars"}), choice("bs", {256, 512, 1024})};
  auto g = std::move(*make_sampler("grid", s, 0));
  REQUIRE(g->name() == "grid");
  REQUIRE(g->size() == 6);
  const std::vector<json> expected = {
      {{"opt", "sgd"}, {"bs", 256}},  {{"opt", "sgd"}, {"bs", 512}},  {{"opt", "sgd"}, {"bs", 1024}},
      {{"opt", "lars"}, {"bs", 256}}, {{"opt", "lars"}, {"bs", 512}}, {{"opt", "lars"}, {"bs", 1024}},
  };
  for (std::int64_t n = 0; n < 6; ++n) {
    auto p = g->next(n, {});
    REQUIRE(p.has_value());
    CHECK(*p == expected[static_cast<std::size_t>(n)]);
  }
  CHECK_FALSE(g->next(6, {}).has_value());
  CHECK_FALSE(g->next(1000, {}).has_value());
  CHECK_FALSE(g->next(-1, {}).has_value());
}

TEST_CASE("grid is complete: every combination exactly once, count = product", "[search][grid]") {
  Space s;
  s.dims = {choice("a", {1, 2}), int_range("b", 0, 10, 5), choice("c", {true, false}),
            choice("d", {"x", "y", "z", 0.5})};
  GridSampler g(s);
  REQUIRE(g.size() == 2 * 3 * 2 * 4);
  std::set<std::string> seen;
  for (std::int64_t n = 0; n < *g.size(); ++n) {
    auto p = g.next(n, {});
    REQUIRE(p.has_value());
    REQUIRE(p->size() == 4);
    seen.insert(p->dump());
  }
  CHECK(seen.size() == 48);
  CHECK_FALSE(g.next(48, {}).has_value());
}

TEST_CASE("grid int_range honours the step and keeps integers", "[search][grid]") {
  Space s;
  s.dims = {int_range("warmup", 0, 10, 4)};  // 0 4 8
  GridSampler g(s);
  REQUIRE(g.size() == 3);
  std::vector<std::int64_t> got;
  for (std::int64_t n = 0; n < 3; ++n) {
    auto p = g.next(n, {});
    REQUIRE(p.has_value());
    REQUIRE((*p)["warmup"].is_number_integer());
    got.push_back((*p)["warmup"].get<std::int64_t>());
  }
  CHECK(got == std::vector<std::int64_t>{0, 4, 8});
  CHECK_FALSE(g.next(3, {}).has_value());
}

TEST_CASE("grid merges fixed params and ignores history", "[search][grid]") {
  Space s;
  s.dims = {choice("lr_rule", {"linear", "sqrt"})};
  s.fixed = {{"epochs", 5}, {"model", "mlp"}};
  GridSampler g(s);
  History history;
  history.trials.resize(3);
  history.trials[0].params = {{"lr_rule", "sqrt"}};
  history.trials[0].status = TrialStatus::complete;
  history.trials[0].value = 0.9;
  auto a = g.next(1, {});
  auto b = g.next(1, history);
  REQUIRE(a.has_value());
  CHECK(*a == json{{"epochs", 5}, {"model", "mlp"}, {"lr_rule", "sqrt"}});
  CHECK(*a == *b);
}

TEST_CASE("grid of no dimensions is the fixed params once", "[search][grid]") {
  Space s;
  s.fixed = {{"epochs", 1}};
  GridSampler g(s);
  CHECK(g.size() == 1);
  CHECK(g.next(0, {}) == std::optional<Params>(json{{"epochs", 1}}));
  CHECK_FALSE(g.next(1, {}).has_value());
}

TEST_CASE("grid rejects a continuous dimension as a broken invariant", "[search][grid]") {
  Space s;
  Dimension u;
  u.name = "lr";
  u.kind = Dimension::Kind::uniform;
  u.low = 0.1;
  u.high = 1;
  s.dims = {u};
  CHECK_THROWS_AS(GridSampler(s), std::invalid_argument);
}

TEST_CASE("grid over a conditional space: each distinct trial once, in nested-loop order", "[search][grid]") {
  // n_layers 1 has no units_l1 (when: n_layers in [2, 3]) and no units_l2 (when: n_layers 3):
  // before, trial 0 and 1 were both {n_layers: 1} (the units_l1 values repeated it).
  Space s;
  s.dims.push_back(choice("n_layers", {1, 2, 3}));
  s.dims.push_back(choice("units_l1", {8, 16}));
  s.dims.back().when = {{"n_layers", {2, 3}}};
  s.dims.push_back(choice("units_l2", {8, 16}));
  s.dims.back().when = {{"n_layers", {3}}};
  s.fixed = {{"lr", 0.1}};
  GridSampler g(s);
  REQUIRE(g.size() == 1 + 2 + 4);
  History h;
  std::vector<json> got;
  for (std::int64_t n = 0; n < *g.size(); ++n) got.push_back(*g.next(n, h));
  CHECK(got == std::vector<json>{{{"lr", 0.1}, {"n_layers", 1}},
                                 {{"lr", 0.1}, {"n_layers", 2}, {"units_l1", 8}},
                                 {{"lr", 0.1}, {"n_layers", 2}, {"units_l1", 16}},
                                 {{"lr", 0.1}, {"n_layers", 3}, {"units_l1", 8}, {"units_l2", 8}},
                                 {{"lr", 0.1}, {"n_layers", 3}, {"units_l1", 8}, {"units_l2", 16}},
                                 {{"lr", 0.1}, {"n_layers", 3}, {"units_l1", 16}, {"units_l2", 8}},
                                 {{"lr", 0.1}, {"n_layers", 3}, {"units_l1", 16}, {"units_l2", 16}}});
  CHECK(std::set<json>(got.begin(), got.end()).size() == got.size());
  CHECK_FALSE(g.next(*g.size(), h).has_value());
}
