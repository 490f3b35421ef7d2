#include "trainer/reporter.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <fmt/format.h>

namespace dlsweep::trainer {

namespace {

/// Scans existing content: returns (next seq, length of the complete-lines prefix).
std::pair<std::int64_t, std::int64_t> scan_existing(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {0, 0};
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  const auto last_nl = s.rfind('\n');
  const std::int64_t complete = last_nl == std::string::npos ? 0 : static_cast<std::int64_t>(last_nl + 1);
  std::int64_t next = 0;
  std::size_t start = 0;
  while (start < static_cast<std::size_t>(complete)) {
    const auto nl = s.find('\n', start);
    if (auto r = protocol::parse_record(std::string_view(s).substr(start, nl - start)); r && r->seq + 1 > next)
      next = r->seq + 1;
    start = nl + 1;
  }
  return {next, complete};
}

}  // namespace

Result<Reporter> Reporter::open(const std::filesystem::path& metrics_file) {
  auto [next, complete] = scan_existing(metrics_file);
  int fd = ::open(metrics_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(fmt::format("cannot open for appending: {}", std::strerror(errno)), metrics_file.string(),
                "check that the trial directory exists and is writable");
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > complete && ::ftruncate(fd, complete) != 0) {
    int e = errno;
    ::close(fd);
    return fail(fmt::format("cannot cut off a torn last line: {}", std::strerror(e)), metrics_file.string(),
                "check that the file is writable");
  }
  return Reporter(fd, metrics_file, next);
}

Reporter::Reporter(Reporter&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), path_(std::move(o.path_)), next_seq_(o.next_seq_), started_empty_(o.started_empty_) {}

Reporter& Reporter::operator=(Reporter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    next_seq_ = o.next_seq_;
    started_empty_ = o.started_empty_;
  }
  return *this;
}

Reporter::~Reporter() {
  if (fd_ >= 0) ::close(fd_);
}

Status Reporter::write(protocol::Record r) {
  r.seq = next_seq_;
  std::string line = protocol::to_json_line(r);
  line.push_back('\n');
  ssize_t n;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(line.size()))
    return fail(n < 0 ? fmt::format("write failed: {}", std::strerror(errno))
                      : fmt::format("short write ({} of {} bytes)", n, line.size()),
                path_.string(), "check free disk space and quota in the trial directory");
  ++next_seq_;
  return {};
}

Status Reporter::log(const std::string& text, std::int64_t step, double epoch, std::int64_t samples, double wall_s) {
  protocol::Record r;
  r.kind = protocol::RecordKind::log;
  r.step = step;
  r.epoch = epoch;
  r.samples = samples;
  r.wall_s = wall_s;
  r.text = text;
  return write(std::move(r));
}

}  // namespace dlsweep::trainer
