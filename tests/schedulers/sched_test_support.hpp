// sched_test_support.hpp — helpers shared by the scheduler tests: a temporary directory,
// an event recorder, and a bounded io_context runner.
#pragma once

#include "tests/support/temp_dir.hpp"

#include <signal.h>
#include <stdlib.h>

#include <cerrno>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.hpp"
#include "schedulers/backend.hpp"
#include "tests/support/run_until.hpp"
#include "tests/support/wait_until.hpp"

namespace sched_test {

/// The tests' one temporary directory (tests/support/temp_dir.hpp).
using test_support::TempDir;

/// Records every event and the running-count high-water mark.
struct Recorder {
  std::vector<dlsweep::sched::JobEvent> events;
  int running = 0;
  int max_running = 0;

  dlsweep::sched::EventHandler handler() {
    return [this](const dlsweep::sched::JobEvent& ev) {
      using K = dlsweep::sched::JobEventKind;
      events.push_back(ev);
      if (ev.kind == K::started) max_running = std::max(max_running, ++running);
      // A terminal event ends a running job unless it never started (cancelled in queue, lost).
      if (ev.kind == K::exited || ev.kind == K::cancelled || ev.kind == K::lost) {
        if (was_started(ev.job_id)) --running;
      }
    };
  }
  bool was_started(const std::string& id) const {
    for (const auto& e : events)
      if (e.job_id == id && e.kind == dlsweep::sched::JobEventKind::started) return true;
    return false;
  }
  std::vector<dlsweep::sched::JobEventKind> kinds(const std::string& id) const {
    std::vector<dlsweep::sched::JobEventKind> out;
    for (const auto& e : events)
      if (e.job_id == id) out.push_back(e.kind);
    return out;
  }
  const dlsweep::sched::JobEvent* terminal(const std::string& id) const {
    using K = dlsweep::sched::JobEventKind;
    for (const auto& e : events)
      if (e.job_id == id && (e.kind == K::exited || e.kind == K::cancelled || e.kind == K::lost)) return &e;
    return nullptr;
  }
  int terminal_count(const std::string& id) const {
    using K = dlsweep::sched::JobEventKind;
    int n = 0;
    for (const auto& e : events)
      if (e.job_id == id && (e.kind == K::exited || e.kind == K::cancelled || e.kind == K::lost)) ++n;
    return n;
  }
};

using test_support::run_until;  // tests/support/run_until.hpp

/// Runs whatever is ready for `s` seconds (to catch events that should NOT come).
inline void run_for(boost::asio::io_context& io, double s) {
  run_until(io, [] { return false; }, s);
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// True once `pid` no longer exists or is a zombie (dead, waiting for a reaper we do not
/// control: in a container PID 1 may never reap it); false if it still lives after the bound
/// of a hang (tests/support/wait_until.hpp).
inline bool process_gone(pid_t pid) {
  return test_support::wait_until([&] {
    if (kill(pid, 0) == -1 && errno == ESRCH) return true;
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    return stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
  });
}

}  // namespace sched_test
