// assets.cpp — find_asset(): the live view's own pages, then the report's scripts, so the
// page draws exactly the charts `dlsweep report` draws (render.js with Chart.js).
#include "serve/assets.hpp"

#include "report/report_page.hpp"

namespace dlsweep::serve {

const Asset* find_asset(std::string_view name) {
  if (const Asset* own = find_own_asset(name)) return own;
  static const Asset kReport[] = {
      {"render.js", "text/javascript; charset=utf-8", report::render_js()},
      {"chart.js", "text/javascript; charset=utf-8", report::chart_js()},
      {"report.css", "text/css; charset=utf-8", report::report_css()},
  };
  for (const auto& a : kReport)
    if (a.name == name && !a.body.empty()) return &a;
  return nullptr;
}

}  // namespace dlsweep::serve
