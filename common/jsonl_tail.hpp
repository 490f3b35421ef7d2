// jsonl_tail.hpp — incremental reader of an append-only JSON-lines file, in bounded memory.
//
// Invariants: a line is returned exactly once, and only when its terminating '\n' has been
// written; a torn last line stays unread until the writer completes it. The reader keeps its
// byte offset, so polling a growing file costs only the new bytes. A file that shrank
// (truncated or replaced) is re-read from the start: ingestion downstream is idempotent.
//
// Memory is bounded whatever the file holds (a trial that prints a tensor into metrics.jsonl
// writes one line of gigabytes): the file is read in chunks of kChunkBytes, a line longer
// than kMaxLineBytes is skipped as it streams past (never held whole) and reported once with
// its offset and size (take_oversized()), and one call returns at most about kMaxBatchBytes of
// lines (more() says when the rest waits for the next call). So the reader holds at most
// kChunkBytes + kMaxLineBytes + kMaxBatchBytes, about 19 MiB, on top of what the caller keeps.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace dlsweep {

class JsonlTail {
 public:
  /// A record line (a metrics record is a few hundred bytes) may be this long.
  static constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxBatchBytes = std::size_t{16} << 20;

  /// A line skipped for its length.
  struct Oversized {
    std::uint64_t offset = 0;  ///< of its first byte
    std::uint64_t bytes = 0;   ///< without the '\n'
  };

  explicit JsonlTail(std::filesystem::path path) : path_(std::move(path)) {}

  /// Complete lines appended since the last call (empty lines skipped), at most about
  /// kMaxBatchBytes of them. A missing file yields no lines, not an error: the trial may not
  /// have started writing yet.
  Result<std::vector<std::string>> read_new_lines();
  /// Lines skipped for their length since the last call of this (complete ones only).
  std::vector<Oversized> take_oversized() { return std::exchange(oversized_, {}); }
  /// True when the last read_new_lines() stopped at kMaxBatchBytes with complete lines left.
  bool more() const { return more_; }
  /// Every complete line from the current offset to the end of the file, read in bounded
  /// batches (for a file that is read once, e.g. on resume).
  Result<std::vector<std::string>> read_all_lines();

  std::uint64_t offset() const { return offset_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::uint64_t offset_ = 0;       ///< bytes consumed, up to and including the last '\n'
  bool skipping_ = false;          ///< inside an oversized line whose '\n' has not come yet
  std::uint64_t skip_start_ = 0;   ///< its first byte
  std::uint64_t scanned_ = 0;      ///< while skipping: bytes scanned so far (no need to read them again)
  bool more_ = false;
  std::vector<Oversized> oversized_;
};

}  // namespace dlsweep
