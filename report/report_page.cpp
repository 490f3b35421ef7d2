// report_page.cpp — assembles the self-contained report page (see report_page.hpp).
#include "report/report_page.hpp"

#include <string>

namespace dlsweep::report {
namespace assets {
std::string_view chart_js();
std::string_view render_js();
std::string_view training_curves_js();
std::string_view batch_model_js();
std::string_view grouped_fit_js();
std::string_view throughput_js();
std::string_view parameters_js();
std::string_view pareto_front_js();
std::string_view pbt_lineage_js();
std::string_view branch_cbs_js();
std::string_view trial_table_js();
std::string_view report_css();
}  // namespace assets

std::string_view chart_js() { return assets::chart_js(); }
// render.js with the card files it calls after it (report/CMakeLists.txt embeds each): one script,
// so `dlsweep serve`'s /assets/render.js and the report page both carry every card.
std::string_view render_js() {
  static const std::string all = [] {
    std::string js(assets::render_js());
    for (std::string_view card : {assets::training_curves_js(), assets::batch_model_js(), assets::grouped_fit_js(),
                                  assets::throughput_js(), assets::parameters_js(), assets::pareto_front_js(),
                                  assets::pbt_lineage_js(), assets::branch_cbs_js(), assets::trial_table_js()}) {
      js += '\n';
      js += card;
    }
    return js;
  }();
  return all;
}
std::string_view report_css() { return assets::report_css(); }
std::string_view chart_js_version() { return DLSWEEP_CHARTJS_VERSION; }

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

// Text inside <title> or an element: &, <, > and quotes escaped.
std::string html_text(std::string_view in) {
  std::string out;
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string json_for_script(const nlohmann::json& model) {
  std::string s = model.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // In JSON strings "\/" is "/" and "\u0021" is "!": same data, and the HTML parser can no
  // longer see "</script>" or "<!--" inside the script element.
  replace_all(s, "</", "<\\/");
  replace_all(s, "<!--", "<\\u0021--");
  return s;
}

std::string report_html(const nlohmann::json& model) {
  std::string title = "dlsweep report";
  if (model.contains("study") && model["study"].contains("name") && model["study"]["name"].is_string())
    title += ": " + model["study"]["name"].get<std::string>();
  std::string js_chart(chart_js()), js_render(render_js());
  // A script element ends at the first "</script" whatever the JavaScript says.
  replace_all(js_chart, "</script", "<\\/script");
  replace_all(js_render, "</script", "<\\/script");
  std::string page;
  page.reserve(js_chart.size() + js_render.size() + 4096);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  // Nothing may be fetched: the page is one file that works offline.
  page += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  page += "<title>" + html_text(title) + "</title>\n<style>\n";
  page += report_css();
  page += "\n</style>\n</head>\n<body>\n<div id=\"root\">rendering...</div>\n";
  page += "<script type=\"application/json\" id=\"dlsweep-model\">" + json_for_script(model) + "</script>\n";
  page += "<script>\n" + js_chart + "\n</script>\n";
  page += "<script>\n" + js_render + "\n</script>\n";
  page += "<script>\nrender(JSON.parse(document.getElementById('dlsweep-model').textContent), "
          "document.getElementById('root'));\n</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace dlsweep::report
