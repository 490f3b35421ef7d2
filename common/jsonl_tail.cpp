#include "common/jsonl_tail.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace dlsweep {

Result<std::vector<std::string>> JsonlTail::read_new_lines() {
  std::vector<std::string> lines;
  std::error_code ec;
  auto size = std::filesystem::file_size(path_, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return lines;
    return fail("cannot stat: " + ec.message(), path_.string());
  }
  if (size < offset_) offset_ = 0;  // truncated or replaced: start over
  if (size == offset_) return lines;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return fail(std::string("cannot open: ") + std::strerror(errno), path_.string());
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(size - offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t start = 0;
  for (;;) {
    auto nl = chunk.find('\n', start);
    if (nl == std::string::npos) break;  // torn tail: leave it for the next call
    std::string line = chunk.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(std::move(line));
    start = nl + 1;
  }
  offset_ += start;
  return lines;
}

}  // namespace dlsweep
