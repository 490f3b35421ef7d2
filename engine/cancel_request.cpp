#include "engine/cancel_request.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace dlsweep::orch {

namespace fs = std::filesystem;

std::string format_cancel_request(const CancelRequest& r) {
  if (r.all) return "all\n";
  std::string out;
  for (auto n : r.numbers) out += fmt::format("{}\n", n);
  return out;
}

CancelRequest parse_cancel_request(std::string_view text) {
  CancelRequest r;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < text.size() && !(text[j] == ' ' || text[j] == '\n' || text[j] == '\t' || text[j] == '\r')) ++j;
    std::string_view word = text.substr(i, j - i);
    i = j;
    if (word.empty()) continue;
    if (word == "all") {
      r.all = true;
      continue;
    }
    std::int64_t n = 0;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), n);
    if (ec == std::errc() && end == word.data() + word.size()) r.numbers.push_back(n);
  }
  return r;
}

std::optional<CancelRequest> take_cancel_request(const fs::path& study_dir) {
  const fs::path file = study_dir / kCancelRequestFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  fs::remove(file, ec);
  return parse_cancel_request(text.str());
}

}  // namespace dlsweep::orch
