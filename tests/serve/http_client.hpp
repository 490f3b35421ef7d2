// http_client.hpp — test helper: raw HTTP over a blocking POSIX socket, so tests can send
// exactly the bytes they mean (malformed, oversized) and see exactly what comes back.
// Every read is bounded by a receive timeout, so a server bug fails a test, never hangs it.
#pragma once

#include <string>

namespace dlsweep::serve::testing {

/// A connected TCP socket to 127.0.0.1:port (closed on destruction).
class Conn {
 public:
  explicit Conn(unsigned short port, int timeout_s = 30);
  /// A connected Unix-domain socket at `path` (not ok() when connect fails: errno_ says why).
  explicit Conn(const std::string& unix_path, int timeout_s = 30);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool ok() const { return fd_ >= 0; }
  int connect_errno() const { return errno_; }
  /// Sends all of `bytes`; false if the peer closed or reset.
  bool send(const std::string& bytes);
  /// Reads one response (headers, then Content-Length bytes of body, or until close).
  /// Empty when the connection closed or reset before any byte came.
  std::string read_response();
  /// Reads until the peer closes (or the timeout); what came.
  std::string read_all();
  void close();

 private:
  int fd_ = -1;
  int errno_ = 0;
  std::string pending_;
};

/// The status code of a raw response ("HTTP/1.1 404 ..." -> 404), or 0.
int status_of(const std::string& response);
/// The body of a raw response (after the blank line).
std::string body_of(const std::string& response);
/// The value of header `name` (case-insensitive), or "".
std::string header_of(const std::string& response, const std::string& name);

/// One request on a fresh connection: "GET target HTTP/1.1" with Host: localhost.
std::string get(unsigned short port, const std::string& target, const std::string& method = "GET");
/// The same with extra header lines ("Cookie: a=b\r\n").
std::string get_with(unsigned short port, const std::string& target, const std::string& headers,
                     const std::string& method = "GET");

}  // namespace dlsweep::serve::testing
