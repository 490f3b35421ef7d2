// assets.hpp — the pages and scripts `dlsweep serve` answers with, compiled into the binary
// (generated from serve/assets/ and the report's scripts by serve/embed_assets.cmake), so the
// server never opens a file named by a request.
#pragma once

#include <string_view>

namespace dlsweep::serve {

struct Asset {
  std::string_view name;          ///< "index.html", "live.js", ...
  std::string_view content_type;  ///< "text/html; charset=utf-8", ...
  std::string_view body;
};

/// The embedded asset of that name, or nullptr.
const Asset* find_asset(std::string_view name);

}  // namespace dlsweep::serve
