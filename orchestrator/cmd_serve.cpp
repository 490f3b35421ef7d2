// cmd_serve.cpp — `dlsweep serve`: the live view of a database (serve/). Opens the database
// read-only, binds (127.0.0.1:8080 unless told), prints the URL, and serves until Ctrl-C or
// SIGTERM.
#include <cstdio>

#include <fmt/format.h>

#include "common/asio.hpp"
#include "db/storage.hpp"
#include "orchestrator/commands.hpp"
#include "serve/http_server.hpp"
#include "serve/study_feed.hpp"

namespace dlsweep::orch {

int cmd_serve(const ServeArgs& a) {
  auto storage = db::Storage::open_readonly(a.db);
  if (!storage) {
    fmt::print(stderr, "error: {}\n", storage.error().message());
    return exit_code::usage;
  }
  if (a.max_connections < 1) {
    fmt::print(stderr, "error: --max-connections must be at least 1\n");
    return exit_code::usage;
  }
  serve::StudyFeed feed(std::move(*storage));
  boost::asio::io_context io;
  serve::ServerOptions opt;
  opt.bind = a.bind;
  opt.port = a.port;
  opt.max_connections = static_cast<std::size_t>(a.max_connections);
  opt.log_requests = a.verbose;
  serve::Server server(io, feed, opt);
  auto ep = server.listen();
  if (!ep) {
    fmt::print(stderr, "error: {}\n", ep.error().message());
    return exit_code::usage;
  }
  const std::string host = ep->address().is_v6() ? "[" + ep->address().to_string() + "]" : ep->address().to_string();
  fmt::print("dlsweep serve: http://{}:{}/ (database {}, read-only; Ctrl-C stops)\n", host, ep->port(), a.db);
  if (!ep->address().is_loopback())
    fmt::print(stderr, "warning: listening on {}, not only this machine: anyone who can reach it can read "
                       "every study (no authentication)\n", host);
  std::fflush(stdout);
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    server.stop();
    io.stop();
  });
  io.run();
  server.stop();
  auto st = server.stats();
  fmt::print(stderr, "dlsweep serve: stopped ({} connections, {} ok, {} 4xx, {} 5xx, {} refused over the limit)\n",
             st.accepted, st.ok, st.client_errors, st.server_errors, st.rejected + st.dropped);
  return exit_code::ok;
}

}  // namespace dlsweep::orch
