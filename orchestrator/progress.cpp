#include "orchestrator/progress.hpp"

#include <unistd.h>

#include <ctime>

#include <fmt/format.h>

namespace dlsweep::orch {

namespace {

std::string clock_time(double s) {
  if (s < 0) s = 0;
  auto t = static_cast<long long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02d}:{:02d}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{:02d}:{:02d}", t / 60, t % 60);
}

std::string timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

}  // namespace

Progress::Progress(std::FILE* out, bool tty, double summary_every_s)
    : out_(out), tty_(tty), summary_every_s_(summary_every_s) {}

Progress Progress::for_stderr() { return Progress(stderr, ::isatty(STDERR_FILENO) == 1); }

std::string Progress::status_line(const SweepSnapshot& s) {
  std::string total = s.total >= 0 ? fmt::format("{}", s.total) : "?";
  std::string line = fmt::format("[{}/{} done | {} running | {} queued | {} failed", s.done(), total,
                                 s.running, s.queued + s.waiting, s.failed);
  if (s.pruned) line += fmt::format(" | {} pruned", s.pruned);
  if (s.cancelled) line += fmt::format(" | {} cancelled", s.cancelled);
  line += "]";
  if (s.best_value)
    line += fmt::format(" best {} {:.4g} (trial {})", s.metric, *s.best_value, s.best_trial);
  line += fmt::format(" | {} elapsed", clock_time(s.elapsed_s));
  if (s.total > 0 && s.done() > 0 && s.done() < s.total) {
    double eta = s.elapsed_s / static_cast<double>(s.done()) * static_cast<double>(s.total - s.done());
    line += fmt::format(", ETA {}", clock_time(eta));
  }
  return line;
}

void Progress::clear_line() {
  if (tty_ && line_shown_) {
    fmt::print(out_, "\r\033[K");
    line_shown_ = false;
  }
}

void Progress::event(const std::string& line, const SweepSnapshot& s) {
  clear_line();
  if (tty_) fmt::print(out_, "{}\n", line);
  else fmt::print(out_, "{} {}\n", timestamp(), line);
  tick(s);
  std::fflush(out_);
}

void Progress::tick(const SweepSnapshot& s) {
  if (tty_) {
    fmt::print(out_, "\r\033[K{}", status_line(s));
    line_shown_ = true;
  } else if (s.elapsed_s - last_summary_s_ >= summary_every_s_) {
    fmt::print(out_, "{} {}\n", timestamp(), status_line(s));
    last_summary_s_ = s.elapsed_s;
  }
  std::fflush(out_);
}

void Progress::finish(const SweepSnapshot& s, const std::string& outcome) {
  clear_line();
  fmt::print(out_, "{}{}\n{}\n", tty_ ? "" : timestamp() + " ", status_line(s), outcome);
  std::fflush(out_);
}

}  // namespace dlsweep::orch
