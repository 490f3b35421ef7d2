// report_page_test.cpp — the HTML page: self-contained (no external URL), the model cannot
// break out of its script element, and the embedded assets are the real ones.
#include <catch2/catch.hpp>

#include <regex>

#include "report/report_page.hpp"

using namespace dlsweep::report;
using nlohmann::json;

TEST_CASE("the embedded assets are Chart.js 3 and render.js") {
  REQUIRE_FALSE(chart_js().empty());
  CHECK(chart_js_version().substr(0, 2) == "3.");
  CHECK(chart_js().find("Chart.js v") != std::string_view::npos);  // its licence banner is kept
  CHECK(render_js().find("function render(model, root)") != std::string_view::npos);
  CHECK(report_css().find(".card") != std::string_view::npos);
}

TEST_CASE("the page references no external URL") {
  const std::string page = report_html(json{{"version", 1}, {"study", {{"name", "s"}}}});
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  // No element loads anything: no src= or href= attributes at all.
  CHECK_FALSE(std::regex_search(page, std::regex(R"(<[a-z]+[^>]*\s(src|href)\s*=)", std::regex::icase)));
  CHECK(page.find("Content-Security-Policy") != std::string::npos);
}

TEST_CASE("model text cannot close its script element or open a comment") {
  json m = {{"version", 1},
            {"study", {{"name", "</script><script>alert(1)</script>"}}},
            {"x", "<!-- </SCRIPT x"}};
  const std::string s = json_for_script(m);
  CHECK(s.find("</") == std::string::npos);
  CHECK(s.find("<!--") == std::string::npos);
  CHECK(json::parse(s) == m);  // same data after JSON.parse
  const std::string page = report_html(m);
  // The study name reaches <title> escaped, and the script element holds the escaped JSON.
  CHECK(page.find("<title>dlsweep report: &lt;/script&gt;") != std::string::npos);
  const auto open = page.find("id=\"dlsweep-model\">");
  REQUIRE(open != std::string::npos);
  CHECK(page.find("</script>", open) > page.find("alert(1)", open));
}

TEST_CASE("invalid UTF-8 in the model is replaced, not thrown") {
  json m = {{"version", 1}, {"study", {{"name", std::string("bad\xff")}}}};
  CHECK_NOTHROW(report_html(m));
  CHECK(json_for_script(m).find("\xef\xbf\xbd") != std::string::npos);
}
