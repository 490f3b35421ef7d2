// unix_socket.cpp — see unix_socket.hpp.
#include "serve/unix_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace dlsweep::serve {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// True when something accepts connections on the socket at `addr`.
bool socket_is_live(const sockaddr_un& addr) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 || errno == EAGAIN;
  ::close(fd);
  return live;
}

}  // namespace

Result<UnixSocketFile> listen_unix_socket(const std::filesystem::path& path, int backlog) {
  const std::string where = "--unix-socket " + path.string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.empty()) return fail("the socket path is empty", where, "pass a path, e.g. --unix-socket $HOME/.dlsweep-serve.sock");
  if (p.size() >= sizeof addr.sun_path)
    return fail(fmt::format("the path is {} bytes; a Unix socket path must be under {}", p.size(), sizeof addr.sun_path),
                where, "pick a shorter path, e.g. $HOME/.dlsweep-serve.sock");
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);

  struct stat st{};
  if (::lstat(p.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return fail("a file that is not a socket is already there; refusing to replace it", where,
                  "pick another --unix-socket path, or remove that file yourself if you are sure it is junk");
    if (socket_is_live(addr))
      return fail("another server is listening on this socket", where,
                  "stop it first, or pick another --unix-socket path");
    if (st.st_uid != ::geteuid())
      return fail(fmt::format("a stale socket of another user (uid {}) is there; refusing to replace it", st.st_uid),
                  where, "pick a path in a directory only you can write, e.g. $HOME/.dlsweep-serve.sock");
    if (::unlink(p.c_str()) != 0 && errno != ENOENT)
      return fail(errno_text("cannot remove the stale socket left by a server that stopped"), where,
                  "remove it yourself (rm " + p + ") or pick another path");
  } else if (errno != ENOENT) {
    return fail(errno_text("cannot check the socket path"), where);
  }

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(errno_text("cannot create a socket"), where);
  auto fail_closed = [&](std::string what, std::string fix = {}) {
    ::close(fd);
    return fail(std::move(what), where, std::move(fix));
  };
  // Linux creates the socket file with the socket inode's mode (less the umask): owner only.
  if (::fchmod(fd, 0600) != 0) return fail_closed(errno_text("cannot set the socket's mode to 0600"));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    return fail_closed(std::string("cannot create the socket file: ") + std::strerror(err),
                       err == EADDRINUSE ? "something created that path just now; pick another --unix-socket path"
                                         : "pick a path in a directory you can write, e.g. $HOME/.dlsweep-serve.sock");
  }
  UnixSocketFile s{fd, path, 0, 0};
  // Belt and braces: chmod the file itself and check it (and that it is ours) before any
  // connection can be accepted.
  if (::chmod(p.c_str(), 0600) != 0 || ::lstat(p.c_str(), &st) != 0) {
    std::string what = errno_text("cannot set the socket file's mode to 0600");
    ::unlink(p.c_str());
    return fail_closed(what);
  }
  if (!S_ISSOCK(st.st_mode) || (st.st_mode & 07777) != 0600 || st.st_uid != ::geteuid()) {
    ::unlink(p.c_str());
    return fail_closed(fmt::format("the socket file came out mode {:04o}, owner {}; refusing to serve on it",
                                   st.st_mode & 07777, st.st_uid));
  }
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  if (::listen(fd, backlog) != 0) {
    std::string what = errno_text("cannot listen on the socket");
    ::unlink(p.c_str());
    return fail_closed(what);
  }
  return s;
}

void remove_unix_socket(const UnixSocketFile& s) {
  if (s.path.empty()) return;
  struct stat st{};
  if (::lstat(s.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == s.dev && st.st_ino == s.ino)
    ::unlink(s.path.c_str());
}

}  // namespace dlsweep::serve
