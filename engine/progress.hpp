// progress.hpp — the one place that owns the sweep's terminal output (ninja's Status).
//
// On a TTY: a single status line redrawn in place (done/running/failed, best value so
// far, elapsed, ETA) with transitions that matter (failed, finished) printed above it.
// Not a TTY (CI logs, nohup): plain timestamped lines, one per transition and a summary
// line every `summary_every_s`. The engine reports; this decides how it looks.
//
// A lost terminal never stops a sweep: a write that fails (a closed pipe — `submit | head`
// —, a hung-up ssh session) points the stream at /dev/null and the sweep goes on
// (dlsweep ignores SIGPIPE and SIGHUP while it drives a sweep). Every line also goes,
// timestamped, to the study's log file (set_log: <runs_dir>/<study>/orchestrator.log),
// which holds the whole story whatever happened to the terminal.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "common/plural.hpp"

namespace dlsweep::orch {

/// The study's log of the orchestrator's output, in <runs_dir>/<study>/.
inline constexpr const char* kOrchestratorLog = "orchestrator.log";

/// A duration in words: "45 s", "7 min 3 s", "2 h 5 min".
std::string duration_text(double s);

struct SweepSnapshot {
  std::int64_t total = -1;  ///< trials the study will run; -1 when unknown
  std::int64_t created = 0;
  std::int64_t waiting = 0, queued = 0, running = 0, complete = 0, pruned = 0, failed = 0, cancelled = 0;
  /// Of the queued: those whose scheduler gives a notable reason for the wait (held, nodes
  /// down or drained, a limit): the status line says "4 queued (4 blocked)".
  std::int64_t blocked = 0;
  std::string metric;       ///< objective metric name
  std::optional<double> best_value;
  std::int64_t best_trial = -1;
  double elapsed_s = 0;
  bool stopping = false;    ///< interrupted or failing fast: no ETA (nothing more will start)
  /// Trials already done when this orchestrator started (resume, --add-trials): elapsed_s
  /// counts only this run, so the ETA is from the trials it finished itself.
  std::int64_t done_before = 0;
  std::int64_t done() const { return complete + pruned + failed + cancelled; }
};

class Progress {
 public:
  /// `out` is where the output goes (stderr by default); `tty` forces the mode.
  Progress(std::FILE* out, bool tty, double summary_every_s = 30);
  static Progress for_stderr();
  ~Progress();
  Progress(Progress&& o) noexcept;
  Progress& operator=(Progress&&) = delete;
  Progress(const Progress&) = delete;

  /// A trial changed state (or a notable event happened): `line` is already phrased.
  void event(const std::string& line, const SweepSnapshot& s);
  /// Called on every engine tick.
  void tick(const SweepSnapshot& s);
  /// The sweep ended; prints the final summary line.
  void finish(const SweepSnapshot& s, const std::string& outcome);

  /// Free text (a summary after the sweep), to the terminal and the log.
  void say(const std::string& text);
  /// Appends every event and the final summary to `path` (created if missing).
  void set_log(const std::string& path);
  /// True once a write to the terminal failed (its later output is dropped).
  bool output_lost() const { return lost_; }

  /// The status line for a snapshot (exposed for tests). `eta`: add the ETA while the sweep runs.
  static std::string status_line(const SweepSnapshot& s, bool eta = true);

 private:
  void clear_line();
  /// Writes to the terminal; never throws (a failed write drops the stream's output).
  void put(const std::string& text);
  void log(const std::string& line);
  std::FILE* out_;
  std::FILE* log_ = nullptr;
  bool lost_ = false;
  bool tty_;
  double summary_every_s_;
  double last_summary_s_ = -1e9;
  bool line_shown_ = false;
};

}  // namespace dlsweep::orch
