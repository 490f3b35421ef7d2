// report_honesty_test.cpp — the report claims only what the data carry: an undetermined
// B_crit shades no regime, parameter importance needs >= 2 trials per group, and a program
// that never reports grad_noise_scale gets no B_simple chart but the metric to report.
#include <catch2/catch.hpp>

#include <string>

#include "report/report_model.hpp"
#include "program_study.hpp"
#include "report_test_support.hpp"
#include "synthetic_study.hpp"

using namespace dlsweep;
using namespace dlsweep::report;
using namespace dlsweep::report::testing;
using nlohmann::json;

TEST_CASE("report: an undetermined B_crit shades no regime and says what would determine it") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must_ok(write_program_study(*s, "wide", undetermined_sweep()));
  json m = must(build_report_model(*s, "wide"));
  const json& an = m["analysis"];
  INFO(an.dump());
  REQUIRE(an["available"] == true);
  CHECK(an["determined"] == false);
  CHECK_THAT(an["undetermined_reason"].get<std::string>(), Catch::Contains("bootstrap interval"));
  CHECK_THAT(an["to_determine"].get<std::string>(), Catch::Contains("run batch sizes above 256"));
  CHECK(an["regimes"] == json::array());         // nothing to shade
  CHECK(an["steps_fit"].size() == 61);           // the fitted curve itself is still drawn
  CHECK(an["noise"]["ratio_to_b_crit"].is_null());
}

TEST_CASE("report: the synthetic study's B_crit is determined and its three regimes are shaded") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "synth", 120));
  json m = must(build_report_model(*s, "synth"));
  REQUIRE(m["analysis"]["available"] == true);
  CHECK(m["analysis"]["determined"] == true);
  CHECK(m["analysis"]["to_determine"].is_null());
  CHECK(m["analysis"]["regimes"].size() == 3);
  CHECK(m["noise_scale"]["reported"] == true);
  CHECK(m["noise_scale"]["note"] == "");
}

TEST_CASE("report: importance is shown only for parameters with at least 2 trials per group") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must_ok(write_program_study(*s, "imp", undetermined_sweep()));
  json m = must(build_report_model(*s, "imp"));
  const json& imp = m["importance"];
  INFO(imp.dump());
  // batch_size: 4 values x 2 trials, rated; lr: 8 values x 1 trial, where eta^2 = 1 by construction.
  REQUIRE(imp["values"].size() == 1);
  CHECK(imp["values"][0]["param"] == "batch_size");
  CHECK(imp["values"][0]["groups"] == 4);
  CHECK(imp["values"][0]["chance"].get<double>() == Approx(3.0 / 7.0));
  REQUIRE(imp["not_rated"].size() == 1);
  CHECK(imp["not_rated"][0]["param"] == "lr");
  CHECK_THAT(imp["note"].get<std::string>(),
             Catch::Contains("lr: 8 trials in 8 groups, fewer than 2 per group") && Catch::Contains("needs at least 16"));
}

TEST_CASE("report: a program that never reports grad_noise_scale gets the metric to report, not an empty chart") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must_ok(write_program_study(*s, "quiet", undetermined_sweep()));
  json m = must(build_report_model(*s, "quiet"));
  CHECK(m["noise_scale"]["reported"] == false);
  CHECK(m["noise_scale"]["trials"] == 0);
  CHECK(m["noise_scale"]["metric"] == "grad_noise_scale");
  CHECK_THAT(m["noise_scale"]["note"].get<std::string>(),
             Catch::Contains("A program shows it by reporting grad_noise_scale") && Catch::Contains("eval records"));
}
