// pool_lease.cpp — see pool_lease.hpp.
#include "schedulers/slurm/pool_lease.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include <fmt/format.h>

namespace dlsweep::sched::pool {

namespace fs = std::filesystem;

std::string_view to_string(LeaseState s) {
  switch (s) {
    case LeaseState::held: return "held";
    case LeaseState::free: return "free";
    case LeaseState::missing: return "missing";
    case LeaseState::unsupported: return "unsupported";
  }
  return "?";
}

Result<Lease> Lease::take(const fs::path& path) {
  // No O_CLOEXEC: the trial's processes are to inherit it.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0)
    return fail(fmt::format("cannot create the run's lease: {}", std::strerror(errno)), path.string(),
                "check the pool directory's permissions");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    if (e == EWOULDBLOCK)
      return fail("the lease is held by another run's processes", path.string(), "wait until they are gone");
    return fail(fmt::format("flock refused: {}", std::strerror(e)), path.string(),
                "mount the shared filesystem with flock support (Lustre: -o flock)");
  }
  return Lease(path, fd);
}

Lease::Lease(Lease&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    close();
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

Lease::~Lease() { close(); }

void Lease::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

LeaseState probe_lease(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? LeaseState::missing : LeaseState::unsupported;
  LeaseState s = LeaseState::free;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0)
    s = errno == EWOULDBLOCK ? LeaseState::held : LeaseState::unsupported;
  ::close(fd);  // lets the lock go, if it was taken
  return s;
}

bool group_has_live_process(long pgid) {
  if (pgid <= 1) return false;
  DIR* proc = ::opendir("/proc");
  if (!proc) return false;
  bool live = false;
  while (dirent* e = ::readdir(proc)) {
    const char* name = e->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    std::ifstream in(fmt::format("/proc/{}/stat", name));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses; the last ')' ends it.
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) continue;  // gone meanwhile
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + close + 2, "%c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      live = true;
      break;
    }
  }
  ::closedir(proc);
  return live;
}

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace dlsweep::sched::pool
