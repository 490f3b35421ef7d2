#include "common/jsonl_tail.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>
#include <utility>

namespace dlsweep {

Result<std::vector<std::string>> JsonlTail::read_new_lines() {
  std::vector<std::string> lines;
  more_ = false;
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path_, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return lines;
    return fail("cannot stat: " + ec.message(), path_.string());
  }
  if (size < offset_ || (skipping_ && size < scanned_)) {  // truncated or replaced: start over
    offset_ = 0;
    skipping_ = false;
  }
  std::uint64_t pos = skipping_ ? scanned_ : offset_;
  if (size == pos) return lines;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return fail(std::string("cannot open: ") + std::strerror(errno), path_.string());
  in.seekg(static_cast<std::streamoff>(pos));
  std::string chunk(kChunkBytes, '\0');
  std::string pending;  // the current line's bytes so far (< kMaxLineBytes)
  std::size_t batch = 0;
  while (pos < size) {
    const auto want = static_cast<std::streamsize>(std::min<std::uint64_t>(kChunkBytes, size - pos));
    in.read(chunk.data(), want);
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    std::size_t start = 0;
    while (start < got) {
      const void* nlp = std::memchr(chunk.data() + start, '\n', got - start);
      const std::size_t nl = nlp ? static_cast<std::size_t>(static_cast<const char*>(nlp) - chunk.data()) : got;
      if (skipping_) {
        if (nlp) {
          oversized_.push_back({skip_start_, pos + nl - skip_start_});
          skipping_ = false;
          offset_ = pos + nl + 1;
        }
      } else {
        pending.append(chunk, start, nl - start);
        if (pending.size() > kMaxLineBytes) {
          // Too long to be a record: skip the rest of it as it streams past.
          skipping_ = true;
          skip_start_ = offset_;
          pending.clear();
          pending.shrink_to_fit();
          if (nlp) {
            oversized_.push_back({skip_start_, pos + nl - skip_start_});
            skipping_ = false;
            offset_ = pos + nl + 1;
          }
        } else if (nlp) {
          std::string line = std::move(pending);
          pending.clear();
          if (!line.empty() && line.back() == '\r') line.pop_back();
          offset_ = pos + nl + 1;
          if (line.find_first_not_of(" \t") != std::string::npos) {
            batch += line.size();
            lines.push_back(std::move(line));
          }
          if (batch >= kMaxBatchBytes) {
            more_ = offset_ < size;
            return lines;
          }
        }
      }
      start = nl + (nlp ? 1 : 0);
    }
    pos += got;
  }
  if (skipping_) scanned_ = pos;  // an oversized line still being written: go on from here
  return lines;
}

Result<std::vector<std::string>> JsonlTail::read_all_lines() {
  std::vector<std::string> all;
  do {
    auto lines = read_new_lines();
    if (!lines) return std::unexpected(lines.error());
    for (auto& l : *lines) all.push_back(std::move(l));
  } while (more_);
  return all;
}

}  // namespace dlsweep
