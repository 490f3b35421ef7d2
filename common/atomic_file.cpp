#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace dlsweep {

Status write_file_atomic(const std::filesystem::path& path, std::string_view content, Durability durability) {
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(fmt::format("cannot create: {}", std::strerror(errno)), tmp.string(),
                "check that the directory exists and is writable");
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(fmt::format("cannot write: {}", std::strerror(e)), tmp.string(), "check free disk space");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if ((durability == Durability::file && ::fsync(fd) != 0) || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail(fmt::format("cannot flush: {}", std::strerror(e)), tmp.string(), "check free disk space");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail(fmt::format("cannot rename into place: {}", std::strerror(e)), path.string());
  }
  return {};
}

bool is_atomic_temp_name(std::string_view name) {
  auto dot = name.rfind(".tmp.");
  if (dot == std::string_view::npos || dot == 0 || dot + 5 >= name.size()) return false;
  for (char c : name.substr(dot + 5))
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace dlsweep
