#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace dlsweep {

Result<AtomicFileWriter> AtomicFileWriter::open(const std::filesystem::path& path) {
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(fmt::format("cannot create: {}", std::strerror(errno)), tmp.string(),
                "check that the directory exists and is writable");
  return AtomicFileWriter(path, std::move(tmp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(std::exchange(o.fd_, -1)) {}

AtomicFileWriter::~AtomicFileWriter() { abandon(); }

void AtomicFileWriter::abandon() {
  if (fd_ < 0) return;
  ::close(std::exchange(fd_, -1));
  ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::write(std::string_view content) {
  if (fd_ < 0) return fail("already committed or abandoned", tmp_.string());
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      abandon();
      return fail(fmt::format("cannot write: {}", std::strerror(e)), tmp_.string(), "check free disk space");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

Status AtomicFileWriter::commit(Durability durability) {
  if (fd_ < 0) return fail("already committed or abandoned", tmp_.string());
  const int fd = std::exchange(fd_, -1);
  int e = durability == Durability::file && ::fsync(fd) != 0 ? errno : 0;
  if (::close(fd) != 0 && e == 0) e = errno;
  if (e != 0) {
    ::unlink(tmp_.c_str());
    return fail(fmt::format("cannot flush: {}", std::strerror(e)), tmp_.string(), "check free disk space");
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    return fail(fmt::format("cannot rename into place: {}", std::strerror(e)), path_.string());
  }
  return {};
}

Status write_file_atomic(const std::filesystem::path& path, std::string_view content, Durability durability) {
  auto w = AtomicFileWriter::open(path);
  if (!w) return std::unexpected(w.error());
  if (auto st = w->write(content); !st) return st;
  return w->commit(durability);
}

bool is_atomic_temp_name(std::string_view name) {
  auto dot = name.rfind(".tmp.");
  if (dot == std::string_view::npos || dot == 0 || dot + 5 >= name.size()) return false;
  for (char c : name.substr(dot + 5))
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace dlsweep
