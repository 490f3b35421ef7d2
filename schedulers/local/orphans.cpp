#include "schedulers/local/orphans.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>

#include "common/protocol.hpp"

namespace dlsweep::sched {

namespace fs = std::filesystem;

namespace {

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(stat, s)) return false;
  auto close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z';
}

}  // namespace

std::vector<pid_t> find_trial_processes(const fs::path& trial_dir) {
  std::error_code ec;
  std::string want = std::string(protocol::kEnvTrialDir) + "=" + fs::absolute(trial_dir, ec).string();
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream env(entry.path() / "environ", std::ios::binary);
    std::string blob((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    std::size_t start = 0;
    while (start < blob.size()) {
      auto end = blob.find('\0', start);
      if (end == std::string::npos) end = blob.size();
      if (blob.compare(start, end - start, want) == 0) {
        if (alive(pid)) out.push_back(pid);
        break;
      }
      start = end + 1;
    }
  }
  return out;
}

std::size_t stop_processes(const std::vector<pid_t>& pids, double grace_s) {
  std::set<pid_t> groups;
  std::size_t live = 0;
  for (pid_t p : pids) {
    if (!alive(p)) continue;
    ++live;
    pid_t g = ::getpgid(p);
    if (g > 1 && g != ::getpgrp()) groups.insert(g);
    ::kill(p, SIGTERM);
  }
  for (pid_t g : groups) ::kill(-g, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  for (;;) {
    bool any = false;
    for (pid_t p : pids) any = any || alive(p);
    if (!any || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (pid_t g : groups) ::kill(-g, SIGKILL);
  for (pid_t p : pids)
    if (alive(p)) ::kill(p, SIGKILL);
  return live;
}

}  // namespace dlsweep::sched
