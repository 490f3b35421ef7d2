#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/trainer/test_util.hpp"
#include "trainer/train_config.hpp"
#include "common/train_params.hpp"

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

TEST_CASE("data_spec carries the config's data settings to load_data", "[config]") {
  auto c = parse_train_config(json{{"dataset", "synthetic"}, {"model", "cnn"}, {"standardize", true}, {"augment", true},
                                   {"train_subset", 300}, {"test_subset", 40}, {"seed", 9}, {"data_dir", "/x"}},
                              "params.json");
  REQUIRE(c);
  CHECK(c->standardize);
  const data::DataSpec ds = data_spec(*c);
  CHECK(ds.dataset == "synthetic");
  CHECK(ds.standardize);
  CHECK(ds.augment);
  CHECK(ds.train_subset == 300);
  CHECK(ds.test_subset == 40);
  CHECK(ds.seed == 9);
  CHECK(ds.dir == "/x");
  CHECK(ds.synthetic_channels == 1);
  CHECK(ds.synthetic_height == 28);
  auto d = parse_train_config(json::object(), "params.json");
  REQUIRE(d);
  CHECK_FALSE(d->standardize);  // default: pixels in [0, 1], as every run before the key existed
  CHECK_FALSE(data_spec(*d).standardize);
  auto bad = parse_train_config(json{{"standardize", "yes"}}, "params.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "params.json: standardize");
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
                                                     {json{{"nesterov", "yes"}}, "nesterov"},
                                                     {json{{"decay", "exp"}}, "decay"},
                                                     {json{{"decay_milestones", {1, "x"}}}, "decay_milestones"},
                                                     {json{{"batch_ramp", "1:256"}}, "batch_ramp"},
                                                     {json{{"batch_ramp", 256}}, "batch_ramp"},
                                                     {json{{"optimizer", "adagrad"}}, "optimizer"},
                                                     {json{{"beta2", 1.0}}, "beta2"},
                                                     {json{{"larc_mode", "both"}}, "larc_mode"},
                                                     {json{{"comm", "gloo"}}, "comm"},
                                                     {json{{"warmup_epochs", 1}, {"warmup_steps", 10}}, "warmup_steps"}}) {
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

TEST_CASE("schedule, optimizer and runtime parameters are parsed", "[config]") {
  auto c = parse_train_config(json{{"decay", "poly"},
                                   {"decay_milestones", {2.5, 4}},
                                   {"decay_power", 1.5},
                                   {"lr_floor", 0.01},
                                   {"batch_ramp", "0:128,2:512"},
                                   {"optimizer", "larc"},
                                   {"larc_mode", "scale"},
                                   {"momentum_correction", false},
                                   {"warmup_steps", 100},
                                   {"comm", "local"},
                                   {"checkpoint_every_s", 0}},
                              "params.json");
  REQUIRE(c);
  CHECK(c->decay == schedule::Decay::poly);
  CHECK(c->decay_milestones == std::vector<double>{2.5, 4});
  CHECK(effective_milestones(*c) == std::vector<double>{2.5, 4});
  CHECK(c->decay_power == 1.5);
  CHECK(c->lr_floor == 0.01);
  CHECK(c->batch_ramp == "0:128,2:512");
  CHECK(c->optimizer == "larc");
  CHECK(c->larc_mode == "scale");
  CHECK_FALSE(c->momentum_correction);
  CHECK(c->warmup_steps == 100);
  CHECK(c->checkpoint_every_s == 0);
  auto d = parse_train_config(json{{"epochs", 8}}, "params.json");
  REQUIRE(d);
  CHECK(effective_milestones(*d) == std::vector<double>{4, 6});  // default: 50% and 75%
}

TEST_CASE("lr_schedule and stop_epoch: parsed, and errors name the key and the fix", "[config]") {
  auto c = parse_train_config(json{{"lr_schedule", "0:0.1,2:0.05"}, {"stop_epoch", 2}, {"epochs", 4}}, "p.json");
  REQUIRE(c);
  CHECK(c->lr_schedule == "0:0.1,2:0.05");
  CHECK(c->stop_epoch == 2);
  CHECK(to_json(*c).at("lr_schedule") == "0:0.1,2:0.05");
  auto bad = parse_train_config(json{{"lr_schedule", "1:0.1"}}, "p.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "p.json: lr_schedule");
  CHECK(bad.error().fix.find("epoch 0") != std::string::npos);
  auto late = parse_train_config(json{{"stop_epoch", 5}, {"epochs", 4}}, "p.json");
  REQUIRE_FALSE(late);
  CHECK(late.error().where == "p.json: stop_epoch");
  CHECK(late.error().fix.find("<= 4") != std::string::npos);
  auto neg = parse_train_config(json{{"stop_epoch", -1}}, "p.json");
  REQUIRE_FALSE(neg);
  CHECK(neg.error().where == "p.json: stop_epoch");
}

TEST_CASE("batch_ramp adaptive and its keys: parsed, and errors name the key and the fix", "[config][adaptive]") {
  auto c = parse_train_config(json{{"batch_ramp", "adaptive"}, {"adaptive_max_batch", 4096}, {"adaptive_every", 20},
                                   {"adaptive_lr", "rule"}, {"adaptive_step_time", {0.002, 1e-5}}},
                              "p.json");
  REQUIRE(c);
  CHECK(c->adaptive_max_batch == 4096);
  CHECK(c->adaptive_every == 20);
  CHECK(c->adaptive_lr == "rule");
  CHECK(c->adaptive_step_time == std::vector<double>{0.002, 1e-5});
  CHECK(to_json(*c).at("adaptive_step_time") == json({0.002, 1e-5}));
  // Each value as submit checks it (check_param_value), then the combinations.
  auto expect = [](const json& params, const std::string& key, const std::string& in_fix) {
    INFO(params.dump());
    auto bad = parse_train_config(params, "p.json");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().where == "p.json: " + key);
    CHECK(bad.error().fix.find(in_fix) != std::string::npos);
  };
  expect(json{{"batch_ramp", "adaptve"}}, "batch_ramp", "\"adaptive\"");
  expect(json{{"adaptive_every", 0}}, "adaptive_every", "[1,");
  expect(json{{"adaptive_lr", "linear"}}, "adaptive_lr", "adascale, rule");
  expect(json{{"adaptive_step_time", {0.1}}}, "adaptive_step_time", "[alpha, beta]");
  expect(json{{"adaptive_step_time", {0, 0}}}, "adaptive_step_time", "[alpha, beta]");
  expect(json{{"adaptive_step_time", {-1, 1}}}, "adaptive_step_time", "[0,");
  expect(json{{"adaptive_max_batch", -1}}, "adaptive_max_batch", "[0,");
  expect(json{{"batch_ramp", "adaptive"}, {"noise_scale_every", 0}}, "noise_scale_every", "noise_scale_every >= 1");
  expect(json{{"batch_ramp", "adaptive"}, {"batch_size", 256}, {"adaptive_max_batch", 128}}, "adaptive_max_batch",
         ">= 256");
  expect(json{{"batch_ramp", "adaptive"}, {"batch_size", 256}, {"adaptive_min_batch", 512}}, "adaptive_min_batch",
         "<= 256");
  // The keys alone are harmless without batch_ramp adaptive.
  CHECK(parse_train_config(json{{"adaptive_max_batch", 8}, {"batch_size", 256}}, "p.json"));
  for (const char* key : {"adaptive_max_batch", "adaptive_min_batch", "adaptive_every", "adaptive_lr", "adaptive_step_time"})
    CHECK(find_param(key) != nullptr);
}
