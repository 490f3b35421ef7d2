// stop_signal.hpp — whether the process has been asked to stop (SIGINT/SIGTERM), readable
// from code that blocks outside the event loop: SQLite's busy wait (db/storage_open.cpp)
// gives up at once when it is set, so a signal always ends the orchestrator within a few
// seconds even while another process holds the database's lock.
//
// watch_stop_signals() chains a tiny handler in front of whatever handles the signals now
// (the Engine's asio signal_set, installed first): it records the signal, then calls the
// previous handler (or, where there was none, does what the default would: re-raises).
#pragma once

namespace dlsweep {

/// Installs the chained handler for SIGINT and SIGTERM (idempotent per installed handler).
void watch_stop_signals();

/// The first SIGINT/SIGTERM seen since watch_stop_signals(), 0 for none. Async-signal-safe.
int stop_signal_seen();

}  // namespace dlsweep
