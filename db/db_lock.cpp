// db_lock.cpp — see db_lock.hpp.
#include "db/db_lock.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace dlsweep::db {

std::string lock_file_text(std::string_view host, long pid) { return fmt::format("{} {}\n", host, pid); }

std::optional<LockHolder> parse_lock_file(std::string_view text) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  if (auto nl = text.find('\n'); nl != std::string_view::npos) text = trim(text.substr(0, nl));
  LockHolder h;
  std::string_view pid_text = text;
  if (auto sp = text.find_last_of(" \t"); sp != std::string_view::npos) {
    h.host = std::string(trim(text.substr(0, sp)));
    pid_text = text.substr(sp + 1);
  }
  long pid = 0;
  auto [ptr, ec] = std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), pid);
  if (ec != std::errc() || ptr != pid_text.data() + pid_text.size() || pid <= 0) return std::nullopt;
  h.pid = pid;
  return h;
}

LockFailure classify_lock_errno(int err) {
  switch (err) {
    case EACCES:
    case EAGAIN:
      return LockFailure::held;
    case ENOLCK:
    case ENOSYS:
    case EOPNOTSUPP:
    case EINVAL:
      return LockFailure::unsupported;
    default:
#if defined(ENOTSUP) && ENOTSUP != EOPNOTSUPP
      if (err == ENOTSUP) return LockFailure::unsupported;
#endif
      return LockFailure::other;
  }
}

Status lock_outcome(int rc, int err, const std::string& db, const std::string& lock_path,
                    const std::optional<LockHolder>& holder, std::string_view this_host, const FsKind& fs,
                    std::string_view study) {
  if (rc == 0) return {};
  switch (classify_lock_errno(err)) {
    case LockFailure::held: {
      std::string who;
      if (holder && !holder->host.empty() && holder->host != this_host)
        who = fmt::format(" (pid {} on host {})", holder->pid, holder->host);
      else if (holder && !holder->host.empty())
        who = fmt::format(" (pid {} on this host, {})", holder->pid, holder->host);
      else if (holder)  // an older dlsweep's lock file, or the kernel's answer: the host is not known
        who = fmt::format(" (pid {})", holder->pid);
      const bool elsewhere = holder && !holder->host.empty() && holder->host != this_host;
      if (!study.empty())
        return fail(fmt::format("another dlsweep orchestrator is driving study '{}' of this database{}", study, who), db,
                    fmt::format("wait for it to finish, or stop it (`dlsweep --db {} cancel {}`{}); other studies "
                                "of this database can run beside it",
                                db, study, elsewhere ? fmt::format(", or end it on {}", holder->host) : std::string()));
      return fail(fmt::format("another dlsweep orchestrator is driving this database{}", who), db,
                  elsewhere ? fmt::format("wait for it to finish, stop it (`dlsweep cancel STUDY`, or end it on {}), "
                                          "or use another --db",
                                          holder->host)
                            : "wait for it to finish, stop it, or use another --db");
    }
    case LockFailure::unsupported:
      return fail(fmt::format("cannot lock the database: this filesystem ({}) has no working POSIX locks: {}", fs.name,
                              std::strerror(err)),
                  lock_path, lock_fix_for(fs));
    case LockFailure::other:
      break;
  }
  return fail(fmt::format("cannot lock the database: {}", std::strerror(err)), lock_path,
              fmt::format("check the file and its filesystem ({}); or pass `--db` on a local disk", fs.name));
}

}  // namespace dlsweep::db
