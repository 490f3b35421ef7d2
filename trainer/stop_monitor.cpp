#include "trainer/stop_monitor.hpp"

#include <csignal>
#include <fstream>
#include <sstream>

#include "common/protocol.hpp"

namespace dlsweep::trainer {

namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) { g_signal = sig; }

}  // namespace

StopMonitor::StopMonitor(std::filesystem::path control_file, std::chrono::milliseconds interval)
    : control_file_(std::move(control_file)), interval_(interval) {}

void StopMonitor::install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and the loop notices sooner
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGUSR2, &sa, nullptr);
}

int StopMonitor::pending_signal() { return g_signal; }

std::optional<StopRequest> StopMonitor::poll() {
  if (int sig = g_signal; sig != 0)
    return StopRequest{StopRequest::Source::signal,
                       sig == SIGTERM  ? "SIGTERM"
                       : sig == SIGINT ? "SIGINT"
                       : sig == SIGUSR2 ? "SIGUSR2"
                                        : "signal",
                       true};
  const auto now = std::chrono::steady_clock::now();
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
