// cmd_serve.cpp — `dlsweep serve`: the live view of a database (serve/). Opens the database
// read-only, settles the token (drawn from getrandom(2), read from --token-file, or none with
// --no-token and a warning), binds (127.0.0.1:8080, or the --unix-socket path, mode 0600),
// prints the URL to open, and serves until Ctrl-C or SIGTERM.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "common/asio.hpp"
#include "db/storage.hpp"
#include "orchestrator/error_printer.hpp"
#include "orchestrator/commands.hpp"
#include "serve/http_server.hpp"
#include "serve/study_feed.hpp"
#include "serve/token.hpp"

namespace dlsweep::orch {
namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "login-node";
  return name;
}

// The query part of the URL to open: "?token=..." (the token itself, or a placeholder when
// it came from a file: the file's content stays out of logs).
std::string token_query(const ServeArgs& a, const std::string& token) {
  if (token.empty()) return "";
  return a.token_file.empty() ? "?token=" + token : "?token=TOKEN";
}

}  // namespace

int cmd_serve(const ServeArgs& a) {
  auto storage = db::Storage::open_readonly(a.db);
  if (!storage) {
    return print_error(storage.error(), exit_code::usage);
  }
  if (a.max_connections < 1) {
    return print_error(Error{"must be at least 1", "--max-connections", "", ErrorKind::bad_input});
  }
  std::string token;
  if (!a.no_token) {
    auto t = a.token_file.empty() ? serve::generate_token() : serve::read_token_file(a.token_file);
    if (!t) {
      return print_error(t.error(), exit_code::usage);
    }
    token = std::move(*t);
  }
  serve::StudyFeed feed(std::move(*storage));
  boost::asio::io_context io;
  serve::ServerOptions opt;
  opt.bind = a.bind;
  opt.port = a.port;
  opt.max_connections = static_cast<std::size_t>(a.max_connections);
  opt.log_requests = a.verbose;
  opt.token = token;
  serve::Server server(io, feed, opt);
  const std::string tq = token_query(a, token);
  const std::string from_file =
      a.token_file.empty() || token.empty() ? "" : fmt::format(" (TOKEN: the content of {})", a.token_file);
  std::string who;  // who can connect, for the --no-token warning
  if (!a.unix_socket.empty()) {
    // Absolute, so the ssh command printed below works from any directory ssh starts in.
    std::error_code ec;
    std::string sock = std::filesystem::absolute(a.unix_socket, ec).lexically_normal().string();
    if (ec) sock = a.unix_socket;
    if (auto ok = server.listen_unix(sock); !ok) {
      return print_error(ok.error(), exit_code::usage);
    }
    fmt::print("dlsweep serve: unix socket {} (mode 0600: only you can connect; database {}, read-only; Ctrl-C stops)\n"
               "  from your laptop: ssh -N -L 8080:{} {}\n"
               "  then open:        http://localhost:8080/{}{}\n",
               sock, a.db, sock, this_host(), tq, from_file);
    who = "anyone who can reach the port that forwards this socket (e.g. every user of the machine running ssh -L)";
  } else {
    auto ep = server.listen();
    if (!ep) {
      return print_error(ep.error(), exit_code::usage);
    }
    const std::string host =
        ep->address().is_v6() ? "[" + ep->address().to_string() + "]" : ep->address().to_string();
    fmt::print("dlsweep serve: http://{}:{}/{} (database {}, read-only; Ctrl-C stops){}\n", host, ep->port(), tq, a.db,
               from_file);
    if (!ep->address().is_loopback() && token.empty())
      fmt::print(stderr, "warning: listening on {}, not only this machine, without a token: anyone who can reach it "
                         "can read every study\n", host);
    else if (!ep->address().is_loopback())
      fmt::print(stderr, "warning: listening on {}, not only this machine: plain HTTP, so the token crosses the "
                         "network unencrypted; prefer 127.0.0.1 and the SSH tunnel (README)\n", host);
    who = ep->address().is_loopback() ? "every user of this machine" : "anyone who can reach " + host;
  }
  if (token.empty())
    fmt::print(stderr, "warning: --no-token: {} can read every study of {}\n", who, a.db);
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
