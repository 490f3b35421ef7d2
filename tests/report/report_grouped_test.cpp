// report_grouped_test.cpp — the report's "critical batch per value" cards: the model carries
// S(B) and B_crit fitted per value of each categorical parameter (report_analysis.hpp,
// analysis/grouped_fit.hpp) with intervals and curves, the same numbers `best --explain
// --group-by` prints, and the page carries the JS that draws them (report/grouped_fit.js).
#include <catch2/catch.hpp>

#include <string>

#include "report/report_model.hpp"
#include "report/report_page.hpp"
#include "report_test_support.hpp"
#include "synthetic_study.hpp"

using namespace dlsweep;
using namespace dlsweep::report;
using namespace dlsweep::report::testing;
using nlohmann::json;

TEST_CASE("report: B_crit per optimizer, each with its interval and fitted curve") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "synth", 120));  // optimizer sgd/adam/lars, all with B_crit 1024
  json m = must(build_report_model(*s, "synth"));
  const json& gf = m["grouped_fits"];
  INFO(gf.dump());
  REQUIRE(gf.is_array());
  REQUIRE(gf.size() == 1);  // optimizer: the only string parameter
  CHECK(gf[0]["param"] == "optimizer");
  CHECK(gf[0]["epoch_factor"] == 1.5);
  REQUIRE(gf[0]["groups"].size() == 3);
  std::vector<std::string> labels;
  for (const auto& g : gf[0]["groups"]) {
    labels.push_back(g["label"].get<std::string>());
    REQUIRE(g["b_crit"].is_number());
    const double b = g["b_crit"].get<double>();
    CHECK(b == Approx(1024).epsilon(0.3));
    CHECK(g["b_crit_lo"].get<double>() <= b);
    CHECK(g["b_crit_hi"].get<double>() >= b);
    CHECK(g["cannot_fit"].is_null());
    CHECK(g["steps_fit"].size() == 61);
    CHECK(g["points"].size() == g["fitted_batch_sizes"]);
    CHECK(g["largest_batch_within_1_5x_epochs"].is_number_integer());
  }
  CHECK(labels == std::vector<std::string>{"sgd", "adam", "lars"});  // order of first appearance
}

TEST_CASE("report: no categorical parameter varies, no grouped fit") {
  TempDir dir;
  auto s = must(db::Storage::open_readwrite(dir / "r.db"));
  must(write_synthetic_study(*s, "one", 1));
  json m = must(build_report_model(*s, "one"));
  CHECK(m["grouped_fits"] == json::array());
}

TEST_CASE("report: the page carries the grouped-fit card code after render.js") {
  const std::string_view js = render_js();
  const auto render_at = js.find("function render(model, root)");
  const auto cards_at = js.find("global.dlsweepGroupedFits = groupedFits");
  REQUIRE(render_at != std::string_view::npos);
  REQUIRE(cards_at != std::string_view::npos);
  CHECK(render_at < cards_at);
  const std::string page = report_html(json{{"version", 1}});
  CHECK(page.find("dlsweepGroupedFits") != std::string::npos);
}
