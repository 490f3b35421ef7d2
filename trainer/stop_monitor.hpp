// stop_monitor.hpp — notices the two ways a trial is asked to stop: the orchestrator writes
// {"action":"stop"} into $DLSWEEP_TRIAL_DIR/control.json (a pruned trial: it will not
// resume), or the process gets SIGUSR2 (Slurm's --signal warning before preemption or the
// time limit), SIGTERM or SIGINT (Slurm, a user's Ctrl-C). The training loop calls poll()
// between steps; the trainer then finishes that step, checkpoints if the request came from a
// signal (StopRequest::checkpoint), writes a record and exits with protocol::kExitStopped.
//
// Cost: poll() reads a flag and the steady clock; it stats control.json at most once per
// interval (0.5 s by default) and reads it only when its mtime or size changed. A control
// file that does not parse (being written) is re-read at the next interval.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace dlsweep::trainer {

struct StopRequest {
  enum class Source { control_file, signal };
  Source source = Source::control_file;
  std::string reason;  ///< "control.json: pruned", "SIGTERM"
  /// True for signals (preemption, time limit, Ctrl-C): the run should be resumable, so the
  /// trainer writes a checkpoint before exiting. False for control.json (pruned).
  bool checkpoint = false;
};

class StopMonitor {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  /// `control_file` may not exist yet. The first poll() checks it immediately. `clock` tells
  /// the time (tests step it by hand).
  explicit StopMonitor(std::filesystem::path control_file,
                       std::chrono::milliseconds interval = std::chrono::milliseconds(500),
                       Clock clock = [] { return std::chrono::steady_clock::now(); });

  /// Routes SIGTERM, SIGINT and SIGUSR2 to a flag: blocks them in the calling thread and
  /// starts one thread that sigwait()s for them. Call first thing in main(), before any other
  /// thread exists, so that all threads inherit the mask. Idempotent.
  static void install_signal_handlers();
  /// The signal received so far (0 = none). (A thread-directed raise() is not seen: send
  /// process-directed signals, kill(getpid(), sig).)
  static int pending_signal();

  /// A stop request, if any has arrived. Cheap enough to call every step.
  std::optional<StopRequest> poll();

 private:
  std::optional<StopRequest> check_file();

  std::filesystem::path control_file_;
  std::chrono::milliseconds interval_;
  Clock clock_;
  std::chrono::steady_clock::time_point next_check_{};
  std::filesystem::file_time_type seen_mtime_{};
  std::uintmax_t seen_size_ = 0;
  bool seen_valid_ = false;  ///< the file at (seen_mtime_, seen_size_) parsed and was not a stop
};

}  // namespace dlsweep::trainer
