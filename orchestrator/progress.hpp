// progress.hpp — the one place that owns the sweep's terminal output (ninja's Status).
//
// On a TTY: a single status line redrawn in place (done/running/failed, best value so
// far, elapsed, ETA) with transitions that matter (failed, finished) printed above it.
// Not a TTY (CI logs, nohup): plain timestamped lines, one per transition and a summary
// line every `summary_every_s`. The engine reports; this decides how it looks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace dlsweep::orch {

struct SweepSnapshot {
  std::int64_t total = -1;  ///< trials the study will run; -1 when unknown
  std::int64_t created = 0;
  std::int64_t waiting = 0, queued = 0, running = 0, complete = 0, pruned = 0, failed = 0, cancelled = 0;
  std::string metric;       ///< objective metric name
  std::optional<double> best_value;
  std::int64_t best_trial = -1;
  double elapsed_s = 0;
  std::int64_t done() const { return complete + pruned + failed + cancelled; }
};

class Progress {
 public:
  /// `out` is where the output goes (stderr by default); `tty` forces the mode.
  Progress(std::FILE* out, bool tty, double summary_every_s = 30);
  static Progress for_stderr();

  /// A trial changed state (or a notable event happened): `line` is already phrased.
  void event(const std::string& line, const SweepSnapshot& s);
  /// Called on every engine tick.
  void tick(const SweepSnapshot& s);
  /// The sweep ended; prints the final summary line.
  void finish(const SweepSnapshot& s, const std::string& outcome);

  /// The status line for a snapshot (exposed for tests).
  static std::string status_line(const SweepSnapshot& s);

 private:
  void clear_line();
  std::FILE* out_;
  bool tty_;
  double summary_every_s_;
  double last_summary_s_ = -1e9;
  bool line_shown_ = false;
};

}  // namespace dlsweep::orch
