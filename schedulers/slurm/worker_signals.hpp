// worker_signals.hpp — the signals a pilot worker acts on, read through the event loop it
// has (poll(2) on a signalfd), never by handlers that set flags for a sleeping loop to find:
// USR2 (the allocation's time-limit warning, passed on to the running trial), TERM and INT
// (stop), CHLD (a trial or a kept-imported runner ended: look now, not at the next tick).
//
// Invariants:
//  - While a WorkerSignals lives, those four are blocked in the calling thread and read from
//    its signalfd; the destructor restores the mask the thread had. Children started by the
//    project's spawner (process_spawn.hpp) begin with nothing blocked and default handlers.
//  - wait(s) returns after at most `s` seconds, at once when one of them is pending (also one
//    that came before the call), and reports what came; CHLD only wakes it (the caller reaps).
//  - One per process at a time (the worker is single-threaded).
#pragma once

#include <signal.h>

namespace dlsweep::sched::pool {

class WorkerSignals {
 public:
  struct Seen {
    bool usr2 = false;  ///< the time-limit warning
    bool term = false;  ///< TERM or INT
    bool child = false; ///< a child ended (reap with waitpid)
  };

  WorkerSignals();
  ~WorkerSignals();
  WorkerSignals(const WorkerSignals&) = delete;
  WorkerSignals& operator=(const WorkerSignals&) = delete;

  /// Waits up to `max_s` seconds for a signal; what came (nothing: the time passed).
  Seen wait(double max_s);
  /// Whether the signalfd could be made (else nothing is blocked, wait() only sleeps and
  /// reports nothing, and the signals keep their default actions).
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  sigset_t old_{};
};

}  // namespace dlsweep::sched::pool
