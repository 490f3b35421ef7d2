// The HTTP server in-process on a free port, with a fake FeedSource: routes, hardening
// (traversal, oversized and malformed requests, unknown methods: 4xx and nothing else),
// the connection limit's 503, database errors as 503, and the loopback Host guard.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_client.hpp"
#include "serve/http_server.hpp"
#include "tests/support/wait_until.hpp"

using namespace dlsweep;
using namespace dlsweep::serve::testing;

namespace {

class FakeFeed final : public serve::FeedSource {
 public:
  std::atomic<bool> broken{false};
  std::atomic<int> calls{0};
  Result<serve::Document> studies() override {
    ++calls;
    if (broken) return fail("database is busy", "fake.db");
    return std::make_shared<const std::string>(R"([{"name":"alpha"}])");
  }
  Result<std::optional<serve::Document>> study(const std::string& name) override {
    ++calls;
    if (broken) return fail("database is busy", "fake.db");
    if (name != "alpha") return std::optional<serve::Document>{};
    return std::optional<serve::Document>(std::make_shared<const std::string>(R"({"study":{"name":"alpha"}})"));
  }
};

// The server on its own io thread; stopped and joined at scope end.
struct Running {
  FakeFeed feed;
  boost::asio::io_context io;
  std::unique_ptr<serve::Server> server;
  std::thread thread;
  unsigned short port = 0;

  explicit Running(serve::ServerOptions opt = {}) {
    opt.port = 0;
    server = std::make_unique<serve::Server>(io, feed, opt);
    auto ep = server->listen();
    REQUIRE(ep.has_value());
    port = ep->port();
    thread = std::thread([this] { io.run(); });
  }
  ~Running() {
    boost::asio::post(io, [this] { server->stop(); io.stop(); });
    thread.join();
  }
  // Still alive and answering?
  int probe() { return status_of(get(port, "/api/studies")); }
};

std::string request(const std::string& first_line, const std::string& extra = "") {
  return first_line + "\r\nHost: localhost\r\nConnection: close\r\n" + extra + "\r\n";
}

int status_for(unsigned short port, const std::string& raw) {
  Conn c(port);
  REQUIRE(c.ok());
  c.send(raw);
  return status_of(c.read_response());
}

bool is_4xx(int s) { return s >= 400 && s < 500; }

}  // namespace

TEST_CASE("server: pages, assets and the JSON endpoints") {
  Running r;
  auto index = get(r.port, "/");
  CHECK(status_of(index) == 200);
  CHECK(header_of(index, "content-type").find("text/html") == 0);
  CHECK(header_of(index, "content-security-policy").find("default-src 'self'") == 0);
  CHECK(body_of(index).find("/assets/live.js") != std::string::npos);
  CHECK(status_of(get(r.port, "/study/alpha")) == 200);
  CHECK(status_of(get(r.port, "/assets/live.js")) == 200);
  auto render = get(r.port, "/assets/render.js");  // the report's renderer, and its chart library
  CHECK(status_of(render) == 200);
  CHECK(body_of(render).find("function render(model, root)") != std::string::npos);
  CHECK(status_of(get(r.port, "/assets/chart.js")) == 200);
  CHECK(status_of(get(r.port, "/assets/report.css")) == 200);
  CHECK(status_of(get(r.port, "/assets/nope.js")) == 404);
  auto list = get(r.port, "/api/studies");
  CHECK(status_of(list) == 200);
  CHECK(header_of(list, "cache-control") == "no-store");
  CHECK(nlohmann::json::parse(body_of(list))[0]["name"] == "alpha");
  CHECK(status_of(get(r.port, "/api/studies/alpha")) == 200);
  auto missing = get(r.port, "/api/studies/beta");
  CHECK(status_of(missing) == 404);
  CHECK(nlohmann::json::parse(body_of(missing))["error"].get<std::string>().find("beta") != std::string::npos);
  // HEAD: the headers of GET, no body.
  auto head = get(r.port, "/api/studies", "HEAD");
  CHECK(status_of(head) == 200);
  CHECK(header_of(head, "content-length") == std::to_string(std::string(R"([{"name":"alpha"}])").size()));
  CHECK(body_of(head).empty());
}

TEST_CASE("server: keep-alive serves several requests on one connection") {
  Running r;
  Conn c(r.port);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(c.send("GET /api/studies HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    CHECK(status_of(c.read_response()) == 200);
  }
}

TEST_CASE("server: path traversal gets 4xx") {
  Running r;
  for (const char* t : {"/../../../../etc/passwd", "/assets/../../etc/passwd", "/assets/%2e%2e/%2e%2e/etc/passwd",
                        "/assets/..%2f..%2fetc%2fpasswd", "/study/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
                        "/api/studies/..%2F..%2Fetc%2Fpasswd", "/assets/..\\..\\etc\\passwd", "/assets/%00",
                        "/etc/passwd", "/assets//etc/passwd", "/./assets/live.js"}) {
    INFO(t);
    auto res = get(r.port, t);
    CHECK(is_4xx(status_of(res)));
    CHECK(res.find("root:") == std::string::npos);
  }
  CHECK(r.probe() == 200);
}

TEST_CASE("server: oversized requests get 4xx") {
  serve::ServerOptions opt;
  Running r(opt);
  // A request line longer than the header limit.
  CHECK(status_for(r.port, request("GET /" + std::string(20000, 'a') + " HTTP/1.1")) == 431);
  // One huge header, and many headers.
  CHECK(status_for(r.port, request("GET / HTTP/1.1", "X-Big: " + std::string(20000, 'b') + "\r\n")) == 431);
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  CHECK(status_for(r.port, request("GET / HTTP/1.1", many)) == 431);
  // A body over the limit, announced or chunked.
  {
    Conn c(r.port);
    c.send(request("GET /api/studies HTTP/1.1", "Content-Length: 104857600\r\n"));
    c.send(std::string(64 * 1024, 'x'));
    CHECK(status_of(c.read_response()) == 413);
  }
  {
    Conn c(r.port);
    c.send(request("POST /api/studies HTTP/1.1", "Transfer-Encoding: chunked\r\n"));
    std::string chunks;
    for (int i = 0; i < 64; ++i) chunks += "400\r\n" + std::string(1024, 'y') + "\r\n";
    c.send(chunks);
    CHECK(status_of(c.read_response()) == 413);
  }
  // A target just under the header limit but over the route limit: 414.
  CHECK(status_for(r.port, request("GET /" + std::string(3000, 'a') + " HTTP/1.1")) == 414);
  CHECK(r.probe() == 200);
}

TEST_CASE("server: malformed requests and unknown methods get 4xx") {
  Running r;
  for (const std::string& raw :
       {std::string("garbage\r\n\r\n"), std::string("GET\r\n\r\n"), std::string("GET / HTTP/9.9\r\nHost: localhost\r\n\r\n"),
        std::string("GET / FOO/1.1\r\n\r\n"), std::string("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        std::string("G\0T / HTTP/1.1\r\n\r\n", 19), std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n")}) {
    INFO(raw);
    const int s = status_for(r.port, raw);
    CHECK(is_4xx(s));
  }
  for (const char* m : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW", "PROPFIND"}) {
    INFO(m);
    auto res = get(r.port, "/api/studies", m);
    CHECK(status_of(res) == 405);
    CHECK(header_of(res, "allow") == "GET, HEAD");
  }
  CHECK(r.feed.calls == 0);  // none of it reached the database side
  // Random bytes: a 4xx or a closed connection, never a 5xx, and the server lives on.
  std::mt19937 rng(42);
  for (int i = 0; i < 100; ++i) {
    std::string junk(1 + rng() % 600, '\0');
    for (auto& ch : junk) ch = static_cast<char>(rng());
    if (i % 2) junk = "GET /" + junk;
    Conn c(r.port, 15);
    c.send(junk + "\r\n\r\n");
    const int s = status_of(c.read_response());
    INFO(i);
    CHECK((s == 0 || is_4xx(s)));
  }
  CHECK(r.probe() == 200);
}

TEST_CASE("server: bound to loopback, other Host names are refused (DNS rebinding)") {
  Running r;
  CHECK(status_for(r.port, "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n") == 403);
  CHECK(status_for(r.port, "GET / HTTP/1.1\r\nHost: evil.example:8080\r\n\r\n") == 403);
  CHECK(status_for(r.port, "GET / HTTP/1.1\r\n\r\n") == 400);
  CHECK(status_for(r.port, "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n") == 200);
  CHECK(status_for(r.port, "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n") == 200);
  CHECK(status_for(r.port, "GET / HTTP/1.0\r\n\r\n") == 200);
  CHECK(serve::loopback_host("localhost"));
  CHECK_FALSE(serve::loopback_host("localhost.evil.example"));
  CHECK_FALSE(serve::loopback_host("[::1]x"));
}

TEST_CASE("server: database errors are 503 and the server goes on") {
  Running r;
  r.feed.broken = true;
  auto res = get(r.port, "/api/studies/alpha");
  CHECK(status_of(res) == 503);
  CHECK(header_of(res, "retry-after") == "1");
  r.feed.broken = false;
  CHECK(r.probe() == 200);
  CHECK(r.server->stats().db_errors == 1);
}

TEST_CASE("server: over max_connections, new connections get 503, and slots come back") {
  serve::ServerOptions opt;
  opt.max_connections = 3;
  Running r(opt);
  std::vector<std::unique_ptr<Conn>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<Conn>(r.port));
    // A request on each proves the server took it as a session before the next connects.
    REQUIRE(held.back()->send("GET /api/studies HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    REQUIRE(status_of(held.back()->read_response()) == 200);
  }
  auto over = get(r.port, "/api/studies");
  CHECK(status_of(over) == 503);
  CHECK(header_of(over, "retry-after") == "1");
  held.pop_back();  // the server sees EOF and frees the slot; poll until it has
  int s = 0;
  test_support::wait_until([&] { return (s = r.probe()) == 200; });
  CHECK(s == 200);
  CHECK(r.server->stats().rejected >= 1);
}

TEST_CASE("server: a burst beyond the limit degrades to 503, never to errors") {
  serve::ServerOptions opt;
  opt.max_connections = 50;
  Running r(opt);
  constexpr int kClients = 150;
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < kClients; ++i) conns.push_back(std::make_unique<Conn>(r.port));
  for (auto& c : conns) c->send("GET /api/studies/alpha HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  int ok = 0, busy = 0, other = 0;
  for (auto& c : conns) {
    const int s = status_of(c->read_response());
    if (s == 200) ++ok;
    else if (s == 503) ++busy;
    else ++other;
  }
  INFO("ok " << ok << " busy " << busy << " other " << other);
  CHECK(other == 0);
  CHECK(ok >= 50);
  CHECK(ok + busy == kClients);
  CHECK(r.probe() == 200);
}
