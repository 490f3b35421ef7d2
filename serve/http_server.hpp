// http_server.hpp — `dlsweep serve`'s HTTP/1.1 server (Boost.Beast on one Asio thread; the
// database work on one more thread through a FeedSource).
//
// Invariants:
//  - Binds to 127.0.0.1 unless told otherwise; bound to a loopback address it answers only
//    requests whose Host is a loopback name (localhost, 127.0.0.1, [::1]), which keeps
//    other web pages from reading it through DNS rebinding.
//  - Every bad request gets a 4xx and the connection closes: oversized request line or
//    headers 431, a body over body_limit 413, unparsable 400, any method but GET/HEAD 405,
//    a target outside the route table 400/404 (http_router.hpp). Nothing a client sends
//    can crash it or make it write the database.
//  - At most max_connections connections are served at once; one more gets a 503 with
//    Retry-After and is closed (at most max_rejecting such answers in flight; past that,
//    new connections are closed at once). Idle or slow connections time out
//    (read_timeout), so they cannot hold the slots forever.
//  - Database errors (busy, locked, I/O) are answered 503 and logged; the server goes on.
//  - With a token (ServerOptions::token, what `dlsweep serve` sets unless --no-token), a
//    request that does not carry it (request_auth.hpp: ?token=, the cookie, or an
//    Authorization header) gets 403 and nothing else: no page, no asset, no study data,
//    and nothing reaches the database side. Checked right after the Host guard, before
//    routing. A page requested with ?token= is answered 303 to the same URL without it,
//    with the cookie set.
//  - listen_unix() serves on a Unix-domain socket (unix_socket.hpp: mode 0600) instead of
//    TCP, with the same rules (the Host guard included: the browser reaches it through an
//    ssh tunnel to localhost); stop() removes the socket file.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "common/asio.hpp"
#include "common/result.hpp"
#include "serve/study_feed.hpp"

namespace dlsweep::serve {

struct ServerOptions {
  std::string bind = "127.0.0.1";
  unsigned short port = 8080;  ///< 0: any free port (listen() says which)
  std::size_t max_connections = 256;
  std::size_t max_rejecting = 256;
  std::uint32_t header_limit = 8 * 1024;  ///< request line + headers, bytes
  std::uint64_t body_limit = 1024;        ///< GET/HEAD carry no body worth more
  std::chrono::milliseconds read_timeout{10'000};
  std::chrono::milliseconds write_timeout{30'000};
  bool log_requests = false;              ///< one stderr line per response
  std::string token;                      ///< "" serves everyone who can connect (--no-token)
};

struct ServerStats {
  std::uint64_t accepted = 0;      ///< connections served
  std::uint64_t rejected = 0;      ///< connections answered 503 (over max_connections)
  std::uint64_t dropped = 0;       ///< connections closed unanswered (over max_rejecting)
  std::uint64_t ok = 0, client_errors = 0, server_errors = 0;  ///< responses by class
  std::uint64_t db_errors = 0;     ///< FeedSource errors (answered 503)
};

class Server {
 public:
  Server(boost::asio::io_context& io, FeedSource& feed, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and starts accepting; the endpoint actually bound (port 0 resolved).
  Result<boost::asio::ip::tcp::endpoint> listen();
  /// Instead of listen(): creates the Unix-domain socket `path` (mode 0600) and starts
  /// accepting on it.
  Status listen_unix(const std::filesystem::path& path);
  /// Stops accepting, finishes the database thread; open connections are closed as their
  /// handlers run. Idempotent. Call on the io_context's thread.
  void stop();
  ServerStats stats() const;

  struct Shared;

 private:
  boost::asio::io_context& io_;
  boost::asio::thread_pool db_pool_{1};
  std::shared_ptr<Shared> shared_;
  bool stopped_ = false;
};

/// True for "localhost", "127.0.0.1", "[::1]" and those with ":port" (the Host header
/// values a loopback-bound server accepts).
bool loopback_host(std::string_view host);

}  // namespace dlsweep::serve
