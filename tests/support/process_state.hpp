// process_state.hpp — whether a process still runs, for tests that check that something was
// stopped. `kill(pid, 0)` succeeds on a zombie (dead, its exit status not yet collected), and
// where PID 1 does not reap orphans (some containers and micro-VMs) a killed trial whose
// parent died stays a zombie for good: it runs nothing, so it is not "running".
#pragma once

#include <sys/types.h>

#include <fstream>
#include <iterator>
#include <string>

namespace test_support {

/// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), 0 when there is no such process.
inline char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

/// True while `pid` exists and is not a zombie.
inline bool process_running(pid_t pid) {
  const char s = process_state(pid);
  return s != 0 && s != 'Z' && s != 'X';
}

}  // namespace test_support
