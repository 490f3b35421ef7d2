#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "trainer/train_config.hpp"
#include "trainer/train_params.hpp"

using namespace dlsweep::trainer;
using nlohmann::json;

TEST_CASE("an empty params object gives the table's defaults", "[config]") {
  auto c = parse_train_config(json::object(), "params.json");
  REQUIRE(c);
  auto j = to_json(*c);
  for (const auto& p : param_table()) {
    INFO(p.name);
    REQUIRE(j.contains(p.name));
    if (p.default_value.is_number()) CHECK(j[p.name].get<double>() == Approx(p.default_value.get<double>()));
    else CHECK(j[p.name] == p.default_value);
  }
  CHECK(to_json(*c).size() == param_table().size());
}

TEST_CASE("values are parsed into the config", "[config]") {
  auto c = parse_train_config(json{{"batch_size", 512}, {"lr_rule", "sqrt"}, {"warmup_start", "zero"},
                                   {"hidden", {64, 32}}, {"nesterov", true}, {"seed", 4294967295.0},
                                   {"epochs", 2.5}},
                              "params.json");
  REQUIRE(c);
  CHECK(c->batch_size == 512);
  CHECK(c->lr_rule == schedule::LrRule::sqrt);
  CHECK(c->warmup_start == schedule::WarmupStart::zero);
  CHECK(c->hidden == std::vector<std::int64_t>{64, 32});
  CHECK(c->nesterov);
  CHECK(c->seed == 4294967295ULL);
  CHECK(c->epochs == 2.5);
  CHECK(c->base_lr == 0.1);  // default
}

TEST_CASE("an unknown key is an error naming it, with a suggestion", "[config]") {
  auto c = parse_train_config(json{{"batch_sise", 64}}, "trial/params.json");
  REQUIRE_FALSE(c);
  CHECK(c.error().where == "trial/params.json: batch_sise");
  CHECK(c.error().fix.find("batch_size") != std::string::npos);
  auto far = parse_train_config(json{{"zzzzzzzzzz", 1}}, "p.json");
  REQUIRE_FALSE(far);
  CHECK(far.error().fix.find("known parameters") != std::string::npos);
}

TEST_CASE("a bad value is an error naming the key and the accepted values", "[config]") {
  struct Case {
    json params;
    std::string key;
  };
  for (const auto& [params, key] : std::vector<Case>{{json{{"batch_size", 0}}, "batch_size"},
                                                     {json{{"batch_size", 1.5}}, "batch_size"},
                                                     {json{{"lr_rule", "cubic"}}, "lr_rule"},
                                                     {json{{"momentum", 1.0}}, "momentum"},
                                                     {json{{"base_lr", 0}}, "base_lr"},
                                                     {json{{"hidden", json::array()}}, "hidden"},
                                                     {json{{"nesterov", "yes"}}, "nesterov"}}) {
    auto c = parse_train_config(params, "p.json");
    INFO(params.dump());
    REQUIRE_FALSE(c);
    CHECK(c.error().where == "p.json: " + key);
    CHECK_FALSE(c.error().fix.empty());
  }
}

TEST_CASE("params files: missing, invalid JSON, not an object", "[config]") {
  test::TempDir tmp;
  auto missing = load_train_config(tmp / "nope.json");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().where.find("nope.json") != std::string::npos);
  test::write_file(tmp / "bad.json", "{\"batch_size\": ");
  auto bad = load_train_config(tmp / "bad.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().what.find("JSON") != std::string::npos);
  test::write_file(tmp / "arr.json", "[1, 2]");
  REQUIRE_FALSE(load_train_config(tmp / "arr.json"));
  test::write_file(tmp / "ok.json", "{\"epochs\": 3}");
  auto ok = load_train_config(tmp / "ok.json");
  REQUIRE(ok);
  CHECK(ok->epochs == 3);
}
