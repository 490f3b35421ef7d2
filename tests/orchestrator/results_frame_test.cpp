#include <catch2/catch.hpp>

#include <algorithm>

#include "orchestrator/results_frame.hpp"

using namespace dlsweep::orch;
using nlohmann::json;

namespace {

dlsweep::db::TrialSummary summary(std::int64_t id, std::int64_t number, std::string state, json params) {
  dlsweep::db::TrialSummary t;
  t.trial_id = id;
  t.number = number;
  t.state = std::move(state);
  t.params = std::move(params);
  return t;
}

std::size_t col(const Rows& r, const std::string& name) {
  auto it = std::find(r.columns.begin(), r.columns.end(), name);
  REQUIRE(it != r.columns.end());
  return static_cast<std::size_t>(it - r.columns.begin());
}

}  // namespace

TEST_CASE("results frame: params_ columns over every trial's params, start/end/duration") {
  auto a = summary(11, 0, "COMPLETE", {{"lr", 0.1}, {"batch_size", 64}});
  a.value = 0.9;
  auto b = summary(12, 1, "RUNNING", {{"lr", 0.2}, {"state", "x"}});  // a param named like a column
  std::map<std::int64_t, dlsweep::db::TrialTimes> times{{11, {100.0, 160.5}}, {12, {130.0, std::nullopt}}};
  Rows r = results_frame({a, b}, times, false);
  CHECK(r.columns == std::vector<std::string>{"trial", "state", "attempt", "value", "best_value", "params_batch_size",
                                              "params_lr", "params_state", "steps_to_target", "samples_to_target",
                                              "time_to_target_s", "samples_per_s", "wall_s", "started_at", "ended_at",
                                              "duration_s", "message"});
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0][col(r, "params_batch_size")] == 64);
  CHECK(r.rows[1][col(r, "params_batch_size")].is_null());  // b has no batch_size
  CHECK(r.rows[1][col(r, "params_state")] == "x");
  CHECK(r.rows[1][col(r, "state")] == "RUNNING");
  CHECK(r.rows[0][col(r, "duration_s")] == 60.5);
  CHECK(r.rows[1][col(r, "started_at")] == 130.0);
  CHECK(r.rows[1][col(r, "duration_s")].is_null());  // unfinished
  CHECK(r.rows[0][col(r, "value")] == 0.9);
  CHECK(r.rows[1][col(r, "value")].is_null());
  CHECK(render(r, OutputFormat::csv).starts_with("trial,state,attempt,value,best_value,params_batch_size,"));
}

TEST_CASE("results frame: a trial without events has no times; json keeps the params object") {
  auto a = summary(5, 0, "WAITING", {{"lr", 0.1}});
  Rows r = results_frame({a}, {}, true);
  CHECK(r.columns[3] == "params");
  CHECK(r.rows[0][3] == json{{"lr", 0.1}});
  for (auto c : {"started_at", "ended_at", "duration_s"}) CHECK(r.rows[0][col(r, c)].is_null());
  CHECK(results_frame({}, {}, false).rows.empty());
}

TEST_CASE("curve rows follow curve_columns; null values stay null") {
  dlsweep::db::CurvePoint p;
  p.number = 3;
  p.attempt = 1;
  p.seq = 7;
  p.kind = "eval";
  p.step = 940;
  p.epoch = 4.0;
  p.samples = 240640;
  p.wall_s = 12.5;
  p.name = "val,acc";
  auto cells = curve_cells(p);
  REQUIRE(cells.size() == curve_columns().size());
  CHECK(csv_row(cells) == "3,1,7,eval,940,4,240640,12.5,\"val,acc\",\n");
  p.value = 0.875;
  CHECK(csv_row(curve_cells(p)).ends_with(",0.875\n"));
}

TEST_CASE("results table: conditional parameters a first trial lacks are shown; constant ones are not") {
  // trial 0 has one layer: units_l1 and dropout_l1 exist only from trial 1 on (`when:`)
  auto a = summary(1, 0, "COMPLETE", {{"n_layers", 1}, {"units_l0", 64}, {"seed", 7}});
  auto b = summary(2, 1, "COMPLETE", {{"n_layers", 2}, {"units_l0", 64}, {"units_l1", 32}, {"seed", 7}});
  auto c = summary(3, 2, "COMPLETE", {{"n_layers", 2}, {"units_l0", 64}, {"units_l1", 32}, {"seed", 7}});
  CHECK(varying_params({a, b, c}) == std::vector<std::string>{"n_layers", "units_l1"});
  CHECK(varying_params({b, c}).empty());  // all equal: nothing to show
  CHECK(varying_params({}).empty());
}

TEST_CASE("results: the final and mean batch of trials whose batch changed over training") {
  using Point = dlsweep::db::Storage::MetricPoint;
  std::map<std::int64_t, std::vector<Point>> points;
  // Trial id 7: an adaptive run, 100 updates at 64 then 50 at 256 (eval after each part).
  points[7] = {{100, 1.0, 6400, 1.0, 64}, {150, 3.0, 6400 + 50 * 256, 2.0, 256}};
  points[8] = {{40, 1.0, 40 * 128, 1.0, 128}, {80, 2.0, 80 * 128, 2.0, 128}};  // fixed batch
  points[9] = {};
  const auto b = batch_summaries(points);
  REQUIRE(b.size() == 2);
  CHECK(b.at(7).final_batch == 256);
  CHECK(*b.at(7).mean_batch == (6400.0 + 50 * 256) / 150);
  CHECK(b.at(7).varied);
  CHECK(b.at(8).final_batch == 128);
  CHECK(*b.at(8).mean_batch == 128);
  CHECK_FALSE(b.at(8).varied);

  Rows rows;
  rows.columns = {"trial", "state", "message"};
  rows.rows = {{0, "COMPLETE", ""}, {1, "COMPLETE", "m"}, {2, "FAILED", "x"}};
  append_batch_columns(rows, b, {{7, 0}, {8, 1}}, /*before_last=*/true);
  REQUIRE(rows.columns == std::vector<std::string>{"trial", "state", "batch_final", "batch_mean", "message"});
  CHECK(rows.rows[0][2] == 256);
  CHECK(rows.rows[0][3].get<double>() == (6400.0 + 50 * 256) / 150);
  CHECK(rows.rows[0][4] == "");
  CHECK(rows.rows[1][2] == 128);
  CHECK(rows.rows[2][2].is_null());  // no batch reports: null
  CHECK(rows.rows[2][3].is_null());
  CHECK(rows.rows[2][4] == "x");
  Rows frame;
  frame.columns = {"trial", "message"};
  frame.rows = {{0, ""}};
  append_batch_columns(frame, b, {{7, 0}}, /*before_last=*/false);
  CHECK(frame.columns == std::vector<std::string>{"trial", "message", "batch_final", "batch_mean"});
  CHECK(frame.rows[0][2] == 256);
}

TEST_CASE("results frame: set_user_attr's attributes as user_attrs_<key> columns, as Optuna's trials_dataframe") {
  Rows rows;
  rows.columns = {"trial", "state", "message"};
  rows.rows = {{0, "COMPLETE", ""}, {1, "PRUNED", "p"}, {2, "FAILED", "x"}};
  const std::map<std::int64_t, nlohmann::json> attrs = {
      {0, {{"tag", "t0"}, {"doubled", 0.5}}},
      {1, {{"tag", "t1"}, {"shape", {1, 2}}, {"none", nullptr}}},
  };
  append_user_attr_columns(rows, attrs, /*before_last=*/true);
  REQUIRE(rows.columns == std::vector<std::string>{"trial", "state", "user_attrs_doubled", "user_attrs_none",
                                                   "user_attrs_shape", "user_attrs_tag", "message"});
  CHECK(rows.rows[0][2] == 0.5);
  CHECK(rows.rows[0][3].is_null());
  CHECK(rows.rows[0][4].is_null());
  CHECK(rows.rows[0][5] == "t0");
  CHECK(rows.rows[1][4] == "[1,2]");  // not a scalar: its JSON text, so a CSV cell holds it
  CHECK(rows.rows[1][5] == "t1");
  for (std::size_t c = 2; c < 6; ++c) CHECK(rows.rows[2][c].is_null());  // no attributes
  CHECK(rows.rows[2][6] == "x");
  // No trial set any: the columns stay as they were.
  Rows frame;
  frame.columns = {"trial", "message"};
  frame.rows = {{0, ""}};
  append_user_attr_columns(frame, {}, /*before_last=*/false);
  CHECK(frame.columns == std::vector<std::string>{"trial", "message"});
  append_user_attr_columns(frame, {{0, {{"k", true}}}}, /*before_last=*/false);
  CHECK(frame.columns == std::vector<std::string>{"trial", "message", "user_attrs_k"});
  CHECK(frame.rows[0][2] == true);
}
