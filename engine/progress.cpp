#include "engine/progress.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <utility>

#include <fmt/format.h>


namespace dlsweep::orch {

namespace {

std::string clock_time(double s) {
  if (s < 0) s = 0;
  auto t = static_cast<long long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02d}:{:02d}", t / 3600, (t / 60) % 60, t % 60);
  return fmt::format("{:02d}:{:02d}", t / 60, t % 60);
}

/// Now, formatted by strftime: local time for the terminal, UTC for the log.
std::string now_as(const char* format, bool utc) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (utc) ::gmtime_r(&now, &tm);
  else ::localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string timestamp() { return now_as("%H:%M:%S", false); }

}  // namespace

std::string duration_text(double s) {
  auto t = static_cast<long long>(s < 0 ? 0 : s + 0.5);
  if (t < 60) return fmt::format("{} s", t);
  if (t < 3600) return t % 60 ? fmt::format("{} min {} s", t / 60, t % 60) : fmt::format("{} min", t / 60);
  return (t / 60) % 60 ? fmt::format("{} h {} min", t / 3600, (t / 60) % 60) : fmt::format("{} h", t / 3600);
}

Progress::Progress(std::FILE* out, bool tty, double summary_every_s)
    : out_(out), tty_(tty), summary_every_s_(summary_every_s) {}

Progress::Progress(Progress&& o) noexcept
    : out_(o.out_),
      log_(std::exchange(o.log_, nullptr)),
      lost_(o.lost_),
      tty_(o.tty_),
      summary_every_s_(o.summary_every_s_),
      last_summary_s_(o.last_summary_s_),
      line_shown_(o.line_shown_) {}

Progress::~Progress() {
  if (log_) std::fclose(log_);
}

Progress Progress::for_stderr() { return Progress(stderr, ::isatty(STDERR_FILENO) == 1); }

void Progress::set_log(const std::string& path) {
  if (log_) std::fclose(log_);
  log_ = std::fopen(path.c_str(), "ae");
}

std::string Progress::status_line(const SweepSnapshot& s, bool eta) {
  std::string total = s.total >= 0 ? fmt::format("{}", s.total) : "?";
  std::string line = fmt::format("[{}/{} done | {} running | {} queued{} | {} failed", s.done(), total, s.running,
                                 s.queued + s.waiting, s.blocked ? fmt::format(" ({} blocked)", s.blocked) : "",
                                 s.failed);
  if (s.pruned) line += fmt::format(" | {} pruned", s.pruned);
  if (s.cancelled) line += fmt::format(" | {} cancelled", s.cancelled);
  line += "]";
  // The best COMPLETE trial's value, as `best` and `status` give a trial's value (its best
  // evaluation; README "The progress line").
  if (s.best_value)
    line += fmt::format(" best {} {:.4g} (trial {})", s.metric, *s.best_value, s.best_trial);
  line += fmt::format(" | {} elapsed", clock_time(s.elapsed_s));
  // From this run's pace only: a resumed sweep's earlier trials took none of its elapsed time
  // (counting them said "ETA 00:00" at the start of a resume with most of the work left).
  const std::int64_t done_here = s.done() - s.done_before;
  if (eta && !s.stopping && s.total > 0 && done_here > 0 && s.done() < s.total) {
    double left = s.elapsed_s / static_cast<double>(done_here) * static_cast<double>(s.total - s.done());
    line += fmt::format(", ETA {}", clock_time(left));
  }
  return line;
}

void Progress::put(const std::string& text) {
  if (lost_ || text.empty()) return;
  if (std::fwrite(text.data(), 1, text.size(), out_) == text.size() && std::fflush(out_) == 0) return;
  // The reader is gone (EPIPE, EIO after a hang-up): drop the rest, quietly, for every
  // writer of this stream — the sweep and its log go on.
  lost_ = true;
  std::clearerr(out_);
  int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::dup2(fd, ::fileno(out_));
    ::close(fd);
  }
  log("note: the terminal's output was lost; progress continues in this log only");
}

void Progress::log(const std::string& line) {
  if (!log_) return;
  std::fputs(fmt::format("{} {}\n", now_as("%Y-%m-%dT%H:%M:%SZ", true), line).c_str(), log_);
  std::fflush(log_);
}

void Progress::clear_line() {
  if (tty_ && line_shown_) {
    put("\r\033[K");
    line_shown_ = false;
  }
}

void Progress::event(const std::string& line, const SweepSnapshot& s) {
  log(line);
  clear_line();
  put(tty_ ? line + "\n" : timestamp() + " " + line + "\n");
  tick(s);
}

void Progress::tick(const SweepSnapshot& s) {
  if (tty_) {
    put("\r\033[K" + status_line(s));
    line_shown_ = true;
  } else if (s.elapsed_s - last_summary_s_ >= summary_every_s_) {
    put(timestamp() + " " + status_line(s) + "\n");
    last_summary_s_ = s.elapsed_s;
  }
}

void Progress::finish(const SweepSnapshot& s, const std::string& outcome) {
  clear_line();
  const std::string line = status_line(s, /*eta=*/false);
  log(line);
  log(outcome);
  put(fmt::format("{}{}\n{}\n", tty_ ? "" : timestamp() + " ", line, outcome));
}

void Progress::say(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  log(t);
  put(t + "\n");
}

}  // namespace dlsweep::orch
