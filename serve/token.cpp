// token.cpp — see token.hpp.
#include "serve/token.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace dlsweep::serve {

Result<std::string> generate_token() {
  unsigned char bytes[32];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("cannot draw a random token: getrandom: ") + std::strerror(errno), "dlsweep serve",
                  "pass --token-file FILE with a secret of your own");
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * sizeof bytes);
  for (unsigned char b : bytes) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 15]);
  }
  return token;
}

bool tokens_equal(std::string_view given, std::string_view expected) {
  if (expected.empty()) return false;
  // Every byte of `expected` is visited whatever `given` holds; a length mismatch is folded
  // into the same accumulator rather than returning early.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0u;
    diff |= static_cast<unsigned>(g ^ static_cast<unsigned char>(expected[i]));
  }
  // Keep the compiler from turning the loop into an early-exit comparison.
  volatile unsigned sink = diff;
  return sink == 0;
}

bool valid_token_chars(std::string_view token) {
  for (char c : token) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_' || c == '~';
    if (!ok) return false;
  }
  return true;
}

Result<std::string> read_token_file(const std::filesystem::path& path) {
  const std::string where = "--token-file " + path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return fail("is a symbolic link; dlsweep reads a token only from a regular file it can check", where,
                  "pass the file the link points to");
    return fail(std::string("cannot open the token file: ") + std::strerror(err), where,
                err == ENOENT ? "create it: (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' > " +
                                    path.string() + ")"
                              : "");
  }
  struct stat st{};
  std::string text;
  std::string problem, fix;
  if (::fstat(fd, &st) != 0) {
    problem = std::string("cannot stat the token file: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = "is not a regular file";
    fix = "pass a file holding only the token";
  } else if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    problem = fmt::format("can be read or written by other users (mode {:04o}); a token they can read lets them "
                          "read every study", st.st_mode & 07777);
    fix = "chmod 600 " + path.string();
  } else if (st.st_uid != ::geteuid()) {
    problem = fmt::format("belongs to another user (uid {}), who can read it", st.st_uid);
    fix = "use a token file of your own, mode 600";
  } else {
    char buf[kMaxTokenChars + 2];
    std::size_t got = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buf + got, sizeof buf - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = std::string("cannot read the token file: ") + std::strerror(errno);
        break;
      }
      if (n == 0 || (got += static_cast<std::size_t>(n)) == sizeof buf) break;
    }
    text.assign(buf, got);
  }
  ::close(fd);
  if (!problem.empty()) return fail(problem, where, fix);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.size() < kMinTokenChars || text.size() > kMaxTokenChars)
    return fail(fmt::format("the token must be {} to {} characters long, got {}", kMinTokenChars, kMaxTokenChars,
                            text.size() > kMaxTokenChars ? "more" : std::to_string(text.size())),
                where, "(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' > " + path.string() + ")");
  if (!valid_token_chars(text))
    return fail("the token may hold only letters, digits and '-', '.', '_', '~' (it travels in URLs and cookies)",
                where, "(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \\n' > " + path.string() + ")");
  return text;
}

}  // namespace dlsweep::serve
