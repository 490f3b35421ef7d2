#include "trainer/stop_monitor.hpp"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <mutex>
#include <thread>
#include <fstream>
#include <sstream>

#include "common/protocol.hpp"

namespace dlsweep::trainer {

namespace {

std::atomic<int> g_signal{0};

}  // namespace

// The stop signals are blocked in the calling thread — the main thread, before any other
// thread exists, so every thread created later (OpenMP, oneDNN, MPI) inherits the mask — and
// one small thread takes them with sigwait(). No compute thread is ever interrupted: a signal
// handler running on top of JIT-compiled oneDNN kernels corrupted the heap now and then
// (seen as malloc aborts right after SIGTERM), and system calls never see EINTR.
void StopMonitor::install_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGTERM, SIGINT, SIGUSR2}) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
      for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) == 0) g_signal.store(sig);
      }
    }).detach();
  });
}

StopMonitor::StopMonitor(std::filesystem::path control_file, std::chrono::milliseconds interval, Clock clock)
    : control_file_(std::move(control_file)), interval_(interval), clock_(std::move(clock)) {}

int StopMonitor::pending_signal() { return g_signal; }

std::optional<StopRequest> StopMonitor::poll() {
  if (int sig = g_signal; sig != 0)
    return StopRequest{StopRequest::Source::signal,
                       sig == SIGTERM  ? "SIGTERM"
                       : sig == SIGINT ? "SIGINT"
                       : sig == SIGUSR2 ? "SIGUSR2"
                                        : "signal",
                       true};
  const auto now = clock_();
  if (now < next_check_) return std::nullopt;
  next_check_ = now + interval_;
  return check_file();
}

std::optional<StopRequest> StopMonitor::check_file() {
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(control_file_, ec);
  if (ec) return std::nullopt;  // no control file: nothing asked
  const auto size = std::filesystem::file_size(control_file_, ec);
  if (ec) return std::nullopt;
  if (seen_valid_ && mtime == seen_mtime_ && size == seen_size_) return std::nullopt;
  std::ifstream in(control_file_);
  std::stringstream ss;
  ss << in.rdbuf();
  auto control = protocol::parse_control(ss.str());
  seen_mtime_ = mtime;
  seen_size_ = size;
  seen_valid_ = control.has_value();
  if (!control || control->action != "stop") return std::nullopt;
  std::string reason = std::string(protocol::kControlFile) + " action=stop";
  if (!control->reason.empty()) reason += " reason=" + control->reason;
  return StopRequest{StopRequest::Source::control_file, reason};
}

}  // namespace dlsweep::trainer
