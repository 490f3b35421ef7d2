// http_server.cpp — see http_server.hpp. Everything but FeedSource calls runs on the
// io_context's thread (one thread), so the counters need no locks; FeedSource calls run on
// db_pool_ (one thread) and post their answer back.
#include "serve/http_server.hpp"

#include <unistd.h>

#include <atomic>
#include <optional>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve/assets.hpp"
#include "serve/http_router.hpp"
#include "serve/request_auth.hpp"
#include "serve/unix_socket.hpp"

namespace dlsweep::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;

struct Server::Shared {
  FeedSource& feed;
  ServerOptions opt;
  asio::any_io_executor db;
  ServerStats stats;
  std::size_t active = 0, rejecting = 0;
  bool stopped = false;
  bool loopback = true;
  std::optional<tcp::acceptor> acceptor;
  std::optional<local::acceptor> unix_acceptor;
  UnixSocketFile unix_file;  ///< the socket file listen_unix() made (removed by stop())
};

bool loopback_host(std::string_view host) {
  std::string_view name = host;
  if (!name.empty() && name.front() == '[') {
    auto close = name.find(']');
    if (close == std::string_view::npos) return false;
    std::string_view rest = name.substr(close + 1);
    name = name.substr(0, close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
  } else if (auto colon = name.find(':'); colon != std::string_view::npos) {
    name = name.substr(0, colon);
  }
  return name == "localhost" || name == "127.0.0.1" || name == "[::1]";
}

namespace {

using Response = http::response<http::span_body<const char>>;

constexpr std::string_view kNeedToken =
    "this server needs its token: open the URL that `dlsweep serve` printed (.../?token=...), "
    "or send the header 'Authorization: token TOKEN'";

constexpr std::string_view kCsp =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

std::string error_json(int status, std::string_view message) {
  return nlohmann::json{{"error", message}, {"status", status}}.dump(-1, ' ', false,
                                                                     nlohmann::json::error_handler_t::replace);
}

template <class Protocol>
class Session : public std::enable_shared_from_this<Session<Protocol>> {
 public:
  using Stream = beast::basic_stream<Protocol>;
  using std::enable_shared_from_this<Session<Protocol>>::shared_from_this;

  Session(typename Protocol::socket socket, std::shared_ptr<Server::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {
    ++shared_->active;
    ++shared_->stats.accepted;
  }
  ~Session() { --shared_->active; }

  void start() { read(); }

 private:
  void read() {
    if (shared_->stopped) return close();
    parser_.emplace();
    parser_->header_limit(shared_->opt.header_limit);
    parser_->body_limit(shared_->opt.body_limit);
    stream_.expires_after(shared_->opt.read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof)
      return close();
    if (ec == http::error::header_limit) return reply_error(431, "request line and headers are too large", false);
    if (ec == http::error::body_limit) return reply_error(413, "request body too large", false);
    if (ec) {
      if (ec.category() == beast::error_code(http::error::bad_method).category())  // any other parse error
        return reply_error(400, "malformed HTTP request: " + ec.message(), false);
      return close();
    }
    handle(parser_->get());
  }

  void handle(const http::request<http::string_body>& req) {
    head_ = req.method() == http::verb::head;
    keep_alive_ = req.keep_alive();
    const std::string method(req.method_string());
    const std::string target(req.target());
    if (shared_->loopback) {
      auto host = req[http::field::host];
      if (host.empty() && req.version() >= 11) return reply_error(400, "HTTP/1.1 request without a Host header", false);
      if (!host.empty() && !loopback_host(std::string_view(host.data(), host.size())))
        return reply_error(403, "Host '" + std::string(host) + "' refused: this server is bound to a loopback "
                                "address and answers only localhost (use --bind to serve other names)", false);
    }
    if (!shared_->opt.token.empty()) {
      AuthRequest ar;
      ar.target = target;
      for (auto [it, end] = req.equal_range(http::field::cookie); it != end; ++it)
        ar.cookies.emplace_back(it->value().data(), it->value().size());
      auto authz = req[http::field::authorization];
      ar.authorization = std::string_view(authz.data(), authz.size());
      AuthResult verdict = authorize(shared_->opt.token, ar);
      if (verdict.verdict == AuthVerdict::refused) return reply_error(403, std::string(kNeedToken), false);
      if (verdict.verdict == AuthVerdict::allowed_by_query) {
        auto host = req[http::field::host];
        set_cookie_ = set_cookie(std::string_view(host.data(), host.size()), shared_->opt.token);
        Route page = route(method, target);
        if (req.method() == http::verb::get &&
            (page.kind == RouteKind::index_page || page.kind == RouteKind::study_page))
          return reply_redirect(verdict.clean_target);
      }
    }
    Route r = route(method, target);
    switch (r.kind) {
      case RouteKind::error: return reply_error(r.status, r.message, r.status == 404 && keep_alive_);
      case RouteKind::index_page: return reply_asset("index.html");
      case RouteKind::study_page: return reply_asset("study.html");
      case RouteKind::asset: return reply_asset(r.arg);
      case RouteKind::studies_api:
      case RouteKind::study_api: return ask_feed(r);
    }
  }

  void ask_feed(const Route& r) {
    if (shared_->stopped) return reply_error(503, "server is shutting down", false);
    // The answer comes back on this connection's executor (the io thread).
    // The session's last reference must never be dropped on the database thread (its
    // destructor touches io-thread state): the job hands its reference back with the answer.
    asio::post(shared_->db, [self = shared_from_this(), kind = r.kind, name = r.arg]() mutable {
      auto& feed = self->shared_->feed;
      Result<std::optional<Document>> doc = std::optional<Document>{};
      try {
        if (kind == RouteKind::studies_api) {
          auto all = feed.studies();
          doc = all ? Result<std::optional<Document>>(std::optional<Document>(*all))
                    : Result<std::optional<Document>>(std::unexpected(all.error()));
        } else {
          doc = feed.study(name);
        }
      } catch (const std::exception& e) {
        doc = fail(std::string("internal error: ") + e.what(), "dlsweep serve");
      }
      auto io = self->stream_.get_executor();
      asio::post(io, [self = std::move(self), doc = std::move(doc), name = std::move(name)] { self->on_feed(doc, name); });
    });
  }

  void on_feed(const Result<std::optional<Document>>& doc, const std::string& name) {
    if (!doc) {
      ++shared_->stats.db_errors;
      fmt::print(stderr, "dlsweep serve: database read failed: {}\n", doc.error().message());
      return reply_error(503, "database read failed: " + doc.error().message(), false);
    }
    if (!*doc) return reply_error(404, "no study named '" + name + "' in this database", keep_alive_);
    reply(200, "application/json; charset=utf-8", ***doc, **doc, true);
  }

  void reply_asset(const std::string& name) {
    const Asset* a = find_asset(name);
    if (!a) return reply_error(404, "no such asset", keep_alive_);
    reply(200, a->content_type, a->body, nullptr, false);  // static storage: nothing to keep alive
  }

  // 303 to `location` (the same page without ?token=; the cookie rides on this answer).
  void reply_redirect(std::string location) {
    location_ = std::move(location);
    reply(303, "text/plain; charset=utf-8", {}, nullptr, true);
  }

  void reply_error(int status, const std::string& message, bool keep) {
    if (!keep) keep_alive_ = false;
    auto text = std::make_shared<const std::string>(error_json(status, message));
    reply(status, "application/json", *text, text, true);
  }

  // `body` stays valid while `keep` is held (nullptr: static storage).
  void reply(int status, std::string_view type, std::string_view body, std::shared_ptr<const void> keep,
             bool no_store) {
    keep_ = std::move(keep);
    auto res = std::make_shared<Response>();
    res->version(11);
    res->result(static_cast<http::status>(status));
    res->set(http::field::server, "dlsweep-serve");
    res->set(http::field::content_type, std::string(type));
    res->set(http::field::cache_control, no_store ? "no-store" : "no-cache");
    res->set("X-Content-Type-Options", "nosniff");
    res->set("Content-Security-Policy", std::string(kCsp));
    res->set("Referrer-Policy", "no-referrer");
    if (status == 405) res->set(http::field::allow, "GET, HEAD");
    if (status == 503) res->set(http::field::retry_after, "1");
    if (!set_cookie_.empty()) res->set(http::field::set_cookie, set_cookie_);
    if (!location_.empty()) res->set(http::field::location, location_);
    set_cookie_.clear();
    location_.clear();
    res->keep_alive(keep_alive_);
    if (head_) {
      res->content_length(body.size());
    } else {
      res->body() = http::span_body<const char>::value_type(body.data(), body.size());
      res->prepare_payload();
    }
    if (status < 400) ++shared_->stats.ok;
    else if (status < 500) ++shared_->stats.client_errors;
    else ++shared_->stats.server_errors;
    if (shared_->opt.log_requests) fmt::print(stderr, "dlsweep serve: {} {}\n", status, body.size());
    res_ = res;
    stream_.expires_after(shared_->opt.write_timeout);
    http::async_write(stream_, *res, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->res_.reset();
      self->keep_.reset();
      if (ec) return self->close();
      if (!self->keep_alive_) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(asio::socket_base::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  Stream stream_;
  std::shared_ptr<Server::Shared> shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<Response> res_;
  std::shared_ptr<const void> keep_;  ///< owner of the body being written
  bool head_ = false, keep_alive_ = true;
  std::string set_cookie_, location_;  ///< for the next reply only
};

// Over max_connections: a canned 503, then read whatever the client sent until it closes
// (closing with unread data would reset the connection and lose the 503), bounded in time.
template <class Protocol>
class Rejector : public std::enable_shared_from_this<Rejector<Protocol>> {
 public:
  using std::enable_shared_from_this<Rejector<Protocol>>::shared_from_this;

  Rejector(typename Protocol::socket socket, std::shared_ptr<Server::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {
    ++shared_->rejecting;
    ++shared_->stats.rejected;
    ++shared_->stats.server_errors;
    text_ = "HTTP/1.1 503 Service Unavailable\r\nServer: dlsweep-serve\r\nRetry-After: 1\r\n"
            "Content-Type: application/json\r\nConnection: close\r\nContent-Length: ";
    const std::string body = error_json(503, "too many connections; retry in a second");
    text_ += std::to_string(body.size()) + "\r\n\r\n" + body;
  }
  ~Rejector() { --shared_->rejecting; }

  void start() {
    stream_.expires_after(std::chrono::seconds(2));
    asio::async_write(stream_, asio::buffer(text_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return;
      beast::error_code ignored;
      self->stream_.socket().shutdown(asio::socket_base::shutdown_send, ignored);
      self->drain();
    });
  }

 private:
  void drain() {
    stream_.async_read_some(asio::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->drain();
    });
  }
  beast::basic_stream<Protocol> stream_;
  std::shared_ptr<Server::Shared> shared_;
  std::string text_;
  char scratch_[4096];
};

template <class Protocol>
void accept_loop(std::shared_ptr<Server::Shared> shared, typename Protocol::acceptor& acceptor) {
  if (shared->stopped) return;
  acceptor.async_accept([shared, &acceptor](beast::error_code ec, typename Protocol::socket socket) {
    if (shared->stopped) return;
    if (ec) {
      // EMFILE and friends: keep accepting; the client's connect is refused or retried.
      if (ec != asio::error::operation_aborted)
        fmt::print(stderr, "dlsweep serve: accept failed: {}\n", ec.message());
    } else if (shared->active < shared->opt.max_connections) {
      std::make_shared<Session<Protocol>>(std::move(socket), shared)->start();
    } else if (shared->rejecting < shared->opt.max_rejecting) {
      std::make_shared<Rejector<Protocol>>(std::move(socket), shared)->start();
    } else {
      ++shared->stats.dropped;
      beast::error_code ignored;
      socket.close(ignored);
    }
    accept_loop<Protocol>(shared, acceptor);
  });
}

}  // namespace

Server::Server(asio::io_context& io, FeedSource& feed, ServerOptions options)
    : io_(io),
      shared_(std::make_shared<Shared>(Shared{feed, std::move(options), db_pool_.get_executor(), {}, 0, 0, false, true,
                                              std::nullopt, std::nullopt, {}})) {}

Server::~Server() { stop(); }

Result<tcp::endpoint> Server::listen() {
  const std::string where = fmt::format("dlsweep serve --bind {} --port {}", shared_->opt.bind, shared_->opt.port);
  beast::error_code ec;
  auto addr = asio::ip::make_address(shared_->opt.bind, ec);
  if (ec) return fail("'" + shared_->opt.bind + "' is not an IP address", where, "pass --bind 127.0.0.1 (or 0.0.0.0 for every interface)");
  shared_->loopback = addr.is_loopback();
  tcp::endpoint ep(addr, shared_->opt.port);
  tcp::acceptor acc(io_);
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen: " + ec.message(), where, "pick another --port (or --port 0 for any free one)");
  auto bound = acc.local_endpoint(ec);
  if (ec) return fail("cannot read the bound address: " + ec.message(), where);
  shared_->acceptor.emplace(std::move(acc));
  accept_loop<tcp>(shared_, *shared_->acceptor);
  return bound;
}

Status Server::listen_unix(const std::filesystem::path& path) {
  auto made = listen_unix_socket(path, asio::socket_base::max_listen_connections);
  if (!made) return std::unexpected(made.error());
  shared_->loopback = true;  // reached through a tunnel to the browser's localhost
  local::acceptor acc(io_);
  beast::error_code ec;
  acc.assign(local(), made->fd, ec);
  if (ec) {
    ::close(made->fd);
    remove_unix_socket(*made);
    return fail("cannot serve on the socket: " + ec.message(), "--unix-socket " + path.string());
  }
  shared_->unix_file = *made;
  shared_->unix_acceptor.emplace(std::move(acc));
  accept_loop<local>(shared_, *shared_->unix_acceptor);
  return {};
}

void Server::stop() {
  if (stopped_) return;
  stopped_ = true;
  shared_->stopped = true;
  if (shared_->acceptor) {
    beast::error_code ec;
    shared_->acceptor->close(ec);
  }
  if (shared_->unix_acceptor) {
    beast::error_code ec;
    shared_->unix_acceptor->close(ec);
    remove_unix_socket(shared_->unix_file);
  }
  db_pool_.join();  // a running FeedSource call finishes; its answer is posted to io
}

ServerStats Server::stats() const { return shared_->stats; }

}  // namespace dlsweep::serve
