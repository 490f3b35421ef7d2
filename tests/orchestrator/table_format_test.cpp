#include <catch2/catch.hpp>

#include "orchestrator/best_schedule.hpp"
#include "orchestrator/table_format.hpp"

using namespace dlsweep::orch;
using nlohmann::json;

TEST_CASE("rows render as table, csv and json") {
  Rows r{{"trial", "note", "acc"}, {{0, "plain", 0.5}, {1, "has,comma \"q\"", nullptr}}};
  auto csv = render(r, OutputFormat::csv);
  CHECK(csv == "trial,note,acc\n0,plain,0.5\n1,\"has,comma \"\"q\"\"\",\n");
  auto j = json::parse(render(r, OutputFormat::json));
  REQUIRE(j.size() == 2);
  CHECK(j[1]["note"] == "has,comma \"q\"");
  CHECK(j[1]["acc"].is_null());
  auto table = render(r, OutputFormat::table);
  CHECK(table.find("trial  note") == 0);
  CHECK_FALSE(parse_output_format("xml").has_value());
}

static dlsweep::db::TrialSummary trial(int n, json params, std::optional<double> best,
                                       std::optional<double> tt, std::optional<std::int64_t> steps) {
  dlsweep::db::TrialSummary t;
  t.number = n;
  t.params = std::move(params);
  t.best_value = best;
  t.value = best;
  t.time_to_target_s = tt;
  t.steps_to_target = steps;
  return t;
}

TEST_CASE("best picks time-to-target when a target was reached, else the best value") {
  std::vector<dlsweep::db::TrialSummary> ts = {
      trial(0, {{"batch_size", 128}}, 0.90, 30.0, 900),
      trial(1, {{"batch_size", 1024}}, 0.89, 12.0, 300),
      trial(2, {{"batch_size", 4096}}, 0.85, std::nullopt, std::nullopt),
  };
  auto by_time = choose_best(ts, "val_acc", "max", 0.88, BestBy::automatic);
  REQUIRE(by_time);
  CHECK(by_time->index == 1);
  CHECK(by_time->criterion == BestBy::time);
  CHECK(by_time->explanation[0].find("batch_size=1024") != std::string::npos);
  CHECK(by_time->explanation[1] == "2 of 3 trials reached the target");

  auto by_value = choose_best(ts, "val_acc", "max", 0.88, BestBy::value);
  REQUIRE(by_value);
  CHECK(by_value->index == 0);

  auto by_steps = choose_best(ts, "val_acc", "max", 0.88, BestBy::steps);
  REQUIRE(by_steps);
  CHECK(by_steps->index == 1);

  auto no_target = choose_best(ts, "val_acc", "max", std::nullopt, BestBy::automatic);
  REQUIRE(no_target);
  CHECK(no_target->criterion == BestBy::value);
  CHECK(no_target->index == 0);

  auto min_mode = choose_best(ts, "val_loss", "min", std::nullopt, BestBy::value);
  REQUIRE(min_mode);
  CHECK(min_mode->index == 2);

  std::vector<dlsweep::db::TrialSummary> none = {trial(0, {}, std::nullopt, std::nullopt, std::nullopt)};
  CHECK_FALSE(choose_best(none, "val_acc", "max", 0.9, BestBy::automatic).has_value());
}
