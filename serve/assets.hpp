// assets.hpp — the pages and scripts `dlsweep serve` answers with, compiled into the binary
// (serve/assets/ by serve/embed_assets.cmake; the report's scripts from report/), so the
// server never opens a file named by a request.
#pragma once

#include <string_view>

namespace dlsweep::serve {

struct Asset {
  std::string_view name;          ///< "index.html", "live.js", ...
  std::string_view content_type;  ///< "text/html; charset=utf-8", ...
  std::string_view body;
};

/// The embedded asset of that name, or nullptr: the live view's own pages (serve/assets/)
/// and the report's renderer (render.js), Chart.js (chart.js) and styles (report.css).
const Asset* find_asset(std::string_view name);

/// Only the live view's own pages (generated from serve/assets/).
const Asset* find_own_asset(std::string_view name);

}  // namespace dlsweep::serve
