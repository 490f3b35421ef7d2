// http_client.cpp — see http_client.hpp.
#include "http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace dlsweep::serve::testing {

Conn::Conn(unsigned short port, int timeout_s) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  timeval tv{timeout_s, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
}

Conn::Conn(const std::string& unix_path, int timeout_s) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  timeval tv{timeout_s, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, unix_path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    errno_ = errno;
    close();
  }
}

Conn::~Conn() { close(); }

void Conn::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Conn::send(const std::string& bytes) {
  std::size_t off = 0;
  while (fd_ >= 0 && off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return fd_ >= 0;
}

std::string Conn::read_response() {
  std::string buf = std::move(pending_);
  pending_.clear();
  char chunk[65536];
  auto fill = [&]() {
    ssize_t n = fd_ >= 0 ? ::recv(fd_, chunk, sizeof chunk, 0) : -1;
    if (n <= 0) return false;
    buf.append(chunk, static_cast<std::size_t>(n));
    return true;
  };
  std::size_t head_end;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos)
    if (!fill()) return buf;
  const std::string head = buf.substr(0, head_end + 4);
  std::string len = header_of(head, "content-length");
  if (len.empty()) {
    while (fill()) {}
    return buf;
  }
  const std::size_t want = head_end + 4 + std::stoul(len);
  while (buf.size() < want)
    if (!fill()) return buf;
  pending_ = buf.substr(want);
  return buf.substr(0, want);
}

std::string Conn::read_all() {
  std::string buf = std::move(pending_);
  pending_.clear();
  char chunk[65536];
  for (;;) {
    ssize_t n = fd_ >= 0 ? ::recv(fd_, chunk, sizeof chunk, 0) : -1;
    if (n <= 0) break;
    buf.append(chunk, static_cast<std::size_t>(n));
  }
  return buf;
}

int status_of(const std::string& r) {
  if (r.rfind("HTTP/1.", 0) != 0 || r.size() < 12) return 0;
  return std::atoi(r.c_str() + 9);
}

std::string body_of(const std::string& r) {
  auto p = r.find("\r\n\r\n");
  return p == std::string::npos ? std::string() : r.substr(p + 4);
}

std::string header_of(const std::string& r, const std::string& name) {
  std::string lower = r.substr(0, r.find("\r\n\r\n"));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  auto p = lower.find("\r\n" + name + ":");
  if (p == std::string::npos) return {};
  p += name.size() + 3;
  auto e = r.find("\r\n", p);
  std::string v = r.substr(p, e - p);
  while (!v.empty() && v.front() == ' ') v.erase(v.begin());
  return v;
}

std::string get(unsigned short port, const std::string& target, const std::string& method) {
  return get_with(port, target, "", method);
}

std::string get_with(unsigned short port, const std::string& target, const std::string& headers,
                     const std::string& method) {
  Conn c(port);
  if (!c.send(method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + headers + "\r\n"))
    return {};
  return method == "HEAD" ? c.read_all() : c.read_response();
}

}  // namespace dlsweep::serve::testing
