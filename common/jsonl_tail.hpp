// jsonl_tail.hpp — incremental reader of an append-only JSON-lines file.
//
// Invariant: a line is returned exactly once, and only when its terminating '\n' has been
// written; a torn last line stays buffered until the writer completes it. The reader keeps
// its byte offset, so polling a growing file costs only the new bytes. A file that shrank
// (truncated or replaced) is re-read from the start: ingestion downstream is idempotent.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace dlsweep {

class JsonlTail {
 public:
  explicit JsonlTail(std::filesystem::path path) : path_(std::move(path)) {}

  /// Complete lines appended since the last call (empty lines skipped). A missing file
  /// yields no lines, not an error: the trial may not have started writing yet.
  Result<std::vector<std::string>> read_new_lines();

  std::uint64_t offset() const { return offset_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::uint64_t offset_ = 0;  ///< bytes consumed, up to and including the last '\n'
};

}  // namespace dlsweep
