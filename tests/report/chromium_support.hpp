// chromium_support.hpp — finds headless Chromium and node, and runs chromium_check.mjs on a
// report: console errors, network requests and per-chart dataset sizes, plus a screenshot.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "../e2e/run_command.hpp"

inline std::string dlsweep_find_on_path(const char* tool) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  std::size_t start = 0;
  while (start <= p.size()) {
    auto end = p.find(':', start);
    auto f = std::filesystem::path(p.substr(start, end == std::string::npos ? std::string::npos : end - start)) / tool;
    if (!f.parent_path().empty() && std::filesystem::exists(f)) return f.string();
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return {};
}

/// $DLSWEEP_CHROMIUM, else chromium / chromium-browser on PATH; "" if none.
inline std::string dlsweep_report_chromium() {
  if (const char* c = std::getenv("DLSWEEP_CHROMIUM"); c && *c) return c;
  for (const char* n : {"chromium", "chromium-browser"})
    if (auto f = dlsweep_find_on_path(n); !f.empty()) return f;
  return {};
}

inline std::string dlsweep_report_node() { return dlsweep_find_on_path("node"); }

/// Loads `html` in headless Chromium; the JSON chromium_check.mjs prints (empty object and a
/// failed REQUIRE when it could not run).
inline nlohmann::json check_in_chromium(const std::filesystem::path& html, const std::filesystem::path& png) {
  auto r = run_command({dlsweep_report_node(), DLSWEEP_SOURCE_DIR "/tests/report/chromium_check.mjs",
                        dlsweep_report_chromium(), html.string(), png.string(), "300"});
  INFO("chromium_check stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}
