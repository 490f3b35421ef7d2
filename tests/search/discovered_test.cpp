// Define-by-run (search/discovered.hpp): the program's suggest_* calls parsed with Optuna's
// argument checks, checked against the study file's declaration (a contradiction names both),
// and drawn for discovered names (tpe: the independent model follows the history).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "search/discovered.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {
Distribution dist(json j) {
  auto d = parse_distribution(j);
  REQUIRE(d.has_value());
  return *d;
}
std::string refused(json j) {
  auto d = parse_distribution(j);
  REQUIRE_FALSE(d.has_value());
  return d.error();
}
}  // namespace

TEST_CASE("discovered: Optuna's argument checks", "[search][discovered]") {
  CHECK(refused({{"type", "float"}, {"low", 1.0}, {"high", 0.5}}).find("low (1.0) must be <= high (0.5)") != std::string::npos);
  CHECK(refused({{"type", "float"}, {"low", 0.0}, {"high", 1.0}, {"log", true}}).find("log=True needs low > 0") != std::string::npos);
  CHECK(refused({{"type", "float"}, {"low", 0.1}, {"high", 1.0}, {"log", true}, {"step", 0.1}}).find("step and log") != std::string::npos);
  CHECK(refused({{"type", "float"}, {"low", 0.0}, {"high", 1.0}, {"step", 0.0}}).find("step must be > 0") != std::string::npos);
  CHECK(refused({{"type", "int"}, {"low", 0}, {"high", 8}, {"log", true}}).find("log=True needs low >= 1") != std::string::npos);
  CHECK(refused({{"type", "int"}, {"low", 1}, {"high", 8}, {"step", 2}, {"log", true}}).find("step and log") != std::string::npos);
  CHECK(refused({{"type", "int"}, {"low", 1.5}, {"high", 8}}).find("integers") != std::string::npos);
  CHECK(refused({{"type", "categorical"}, {"choices", json::array()}}).find("non-empty") != std::string::npos);
  CHECK(refused({{"type", "categorical"}, {"choices", {json::array()}}}).find("each choice") != std::string::npos);
  CHECK(refused({{"type", "normal"}}).find("unknown distribution type 'normal'") != std::string::npos);
  // Optuna adjusts high onto the step's grid.
  CHECK(dist({{"type", "int"}, {"low", 1}, {"high", 10}, {"step", 4}}).int_high == 9);
  CHECK(dist({{"type", "float"}, {"low", 0.0}, {"high", 1.0}, {"step", 0.3}}).high == Approx(0.9));
  CHECK(dist({{"type", "float"}, {"low", 1e-5}, {"high", 0.1}, {"log", true}}).call("lr") ==
        "suggest_float('lr', 1e-05, 0.1, log=True)");
}

TEST_CASE("discovered: a call that contradicts the study's declaration names both", "[search][discovered]") {
  const auto lr = dim_log("lr", 1e-5, 1e-1);
  CHECK_FALSE(contradiction(lr, "lr", dist({{"type", "float"}, {"low", 1e-5}, {"high", 1e-1}, {"log", true}})));
  auto why = contradiction(lr, "lr", dist({{"type", "float"}, {"low", 1e-4}, {"high", 1e-1}, {"log", true}}));
  REQUIRE(why);
  CHECK(why->find("space.lr: log_uniform [1e-05, 0.1]") != std::string::npos);
  CHECK(why->find("suggest_float('lr', 0.0001, 0.1, log=True)") != std::string::npos);
  CHECK(contradiction(lr, "lr", dist({{"type", "float"}, {"low", 1e-5}, {"high", 1e-1}})));  // log differs
  CHECK(contradiction(lr, "lr", dist({{"type", "int"}, {"low", 1}, {"high", 3}})));

  const auto n = dim_int("n_layers", 1, 3);
  CHECK_FALSE(contradiction(n, "n_layers", dist({{"type", "int"}, {"low", 1}, {"high", 3}})));
  CHECK(contradiction(n, "n_layers", dist({{"type", "int"}, {"low", 1}, {"high", 4}})));
  CHECK(contradiction(n, "n_layers", dist({{"type", "int"}, {"low", 1}, {"high", 3}, {"log", true}})));

  const auto opt = dim_choice("optimizer", {"Adam", "SGD"});
  CHECK_FALSE(contradiction(opt, "optimizer", dist({{"type", "categorical"}, {"choices", {"SGD", "Adam"}}})));
  why = contradiction(opt, "optimizer", dist({{"type", "categorical"}, {"choices", {"Adam", "RMSprop"}}}));
  REQUIRE(why);
  CHECK(why->find("space.optimizer: choice [\"Adam\",\"SGD\"]") != std::string::npos);
  CHECK(why->find("suggest_categorical('optimizer', [\"Adam\",\"RMSprop\"])") != std::string::npos);
}

TEST_CASE("discovered: draws lie in the call's range, on its step", "[search][discovered]") {
  const auto stepped = dist({{"type", "float"}, {"low", 0.1}, {"high", 1.0}, {"step", 0.3}});
  const auto ints = dist({{"type", "int"}, {"low", 2}, {"high", 20}, {"step", 3}});
  std::set<double> fs;
  std::set<std::int64_t> is;
  for (std::int64_t n = 0; n < 200; ++n) {
    const double f = draw_discovered("random", 5, nullptr, "m", stepped, n, {}).get<double>();
    const double k = (f - 0.1) / 0.3;
    CHECK(std::abs(k - std::round(k)) < 1e-9);
    fs.insert(std::round(k));
    const auto i = draw_discovered("random", 5, nullptr, "k", ints, n, {}).get<std::int64_t>();
    CHECK((i - 2) % 3 == 0);
    is.insert(i);
  }
  CHECK(fs.size() == 4);  // 0.1, 0.4, 0.7, 1.0: high itself is a value, as in Optuna
  CHECK(is.size() == 7);  // 2, 5, ..., 20
  CHECK(draw_discovered("random", 5, nullptr, "x", dist({{"type", "float"}, {"low", 2.0}, {"high", 2.0}}), 0, {}) == 2.0);
}

TEST_CASE("discovered: tpe's independent model follows the history of that name", "[search][discovered]") {
  const auto opt = dist({{"type", "categorical"}, {"choices", {"Adam", "RMSprop", "SGD"}}});
  History h;
  h.maximize = true;
  for (int i = 0; i < 30; ++i) {
    const std::string o = i % 3 == 0 ? "Adam" : i % 3 == 1 ? "RMSprop" : "SGD";
    Params p = Params::object();
    p["optimizer"] = o;
    h.trials.push_back(complete(i, p, o == "SGD" ? 1.0 + i * 0.01 : 0.1 + i * 0.01));
  }
  int tpe_sgd = 0, random_sgd = 0;
  for (std::int64_t n = 30; n < 90; ++n) {
    tpe_sgd += draw_discovered("tpe", 1, nullptr, "optimizer", opt, n, h) == "SGD";
    random_sgd += draw_discovered("random", 1, nullptr, "optimizer", opt, n, h) == "SGD";
  }
  CHECK(tpe_sgd >= 40);     // the good trials all used SGD
  CHECK(random_sgd <= 35);  // about a third
}

TEST_CASE("discovered: the space `dlsweep enqueue` checks against gains the discovered names", "[search][discovered]") {
  Space s;
  s.dims.push_back(dim_log("lr", 1e-5, 1e-1));
  std::map<std::string, Distribution> found{
      {"lr", dist({{"type", "float"}, {"low", 1e-3}, {"high", 1e-1}})},  // declared: the study's entry stays
      {"momentum", dist({{"type", "float"}, {"low", 0.5}, {"high", 0.95}, {"step", 0.05}})},
      {"n_layers", dist({{"type", "int"}, {"low", 1}, {"high", 3}})},
      {"opt", dist({{"type", "categorical"}, {"choices", {"Adam", "SGD"}}})}};
  const Space out = with_discovered(s, found);
  REQUIRE(out.dims.size() == 4);
  CHECK(out.dims[0].kind == Dimension::Kind::log_uniform);
  CHECK(out.dims[0].low == 1e-5);
  const auto& m = out.dims[1];
  CHECK(m.name == "momentum");
  REQUIRE(m.kind == Dimension::Kind::choice);
  CHECK(m.choices.size() == 10);
  CHECK(std::find(m.choices.begin(), m.choices.end(), json(0.85)) != m.choices.end());  // as typed, not 0.8500000000000001
  CHECK(out.dims[2].kind == Dimension::Kind::int_range);
  CHECK(out.dims[2].int_high == 3);
  CHECK(out.dims[3].choices == std::vector<json>{"Adam", "SGD"});
  const auto events = discovered_from_events(
      {R"({"name":"w","distribution":{"type":"int","low":1,"high":8}})", "not json",
       R"({"name":"w","distribution":{"type":"int","low":1,"high":16}})"});
  REQUIRE(events.size() == 1);
  CHECK(events.at("w").int_high == 8);  // the first asker's
}
