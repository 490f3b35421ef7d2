// reporter.hpp — appends protocol records (common/protocol.hpp) to a trial's metrics.jsonl.
//
// Invariants:
//  - each record is ONE write() of the full line plus '\n' on an O_APPEND descriptor, so a
//    reader (the orchestrator tailing the file) sees whole lines or a torn last line, never
//    interleaved fragments; nothing is buffered in user space.
//  - seq increases by one per record. Opening a file that already holds records (the same
//    attempt restarted after preemption) continues after the last complete record's seq, and
//    first cuts off a torn last line left by a crash so the next record starts on its own line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "common/protocol.hpp"
#include "common/result.hpp"

namespace dlsweep::trainer {

class Reporter {
 public:
  /// Opens (creating) `metrics_file` for appending.
  static Result<Reporter> open(const std::filesystem::path& metrics_file);

  Reporter(Reporter&& o) noexcept;
  Reporter& operator=(Reporter&& o) noexcept;
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;
  ~Reporter();

  /// Writes `r` with the next seq (r.seq is overwritten).
  Status write(protocol::Record r);
  /// A kind=log record with `text`.
  Status log(const std::string& text, std::int64_t step, double epoch, std::int64_t samples, double wall_s);

  std::int64_t next_seq() const { return next_seq_; }
  /// The metrics file held no record when it was opened: this run is the first to write it
  /// (a fresh trial, e.g. one forked from another trial's copied checkpoint).
  bool started_empty() const { return started_empty_; }
  /// Continues at `seq` at least (a resumed run whose metrics file lost records the
  /// checkpoint knows were written: seq never goes back).
  void ensure_next_seq(std::int64_t seq) {
    if (seq > next_seq_) next_seq_ = seq;
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  Reporter(int fd, std::filesystem::path path, std::int64_t next_seq)
      : fd_(fd), path_(std::move(path)), next_seq_(next_seq), started_empty_(next_seq == 0) {}
  int fd_ = -1;
  std::filesystem::path path_;
  std::int64_t next_seq_ = 0;
  bool started_empty_ = true;
};

}  // namespace dlsweep::trainer
