// The HTTP server in-process with a token and on a Unix socket, with a fake FeedSource: 403
// and nothing else without the token (no page, asset or data, nothing asked of the
// database), ?token= sets the cookie and redirects a page, the cookie and the Authorization
// header get in; the socket file is mode 0600, a non-socket file is never replaced, a stale
// socket is, a live one is not, and stop() removes it.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

#include "../db/db_test_support.hpp"
#include "http_client.hpp"
#include "serve/http_server.hpp"
#include "serve/unix_socket.hpp"

using namespace dlsweep;
using namespace dlsweep::serve::testing;
using dlsweep::db::testing::TempDir;

namespace {

const std::string kTok = "5ecret-5ecret-5ecret-5ecret";

class Feed final : public serve::FeedSource {
 public:
  std::atomic<int> calls{0};
  Result<serve::Document> studies() override {
    ++calls;
    return std::make_shared<const std::string>(R"([{"name":"alpha"}])");
  }
  Result<std::optional<serve::Document>> study(const std::string& name) override {
    ++calls;
    if (name != "alpha") return std::optional<serve::Document>{};
    return std::optional<serve::Document>(std::make_shared<const std::string>(R"({"study":{"name":"alpha"}})"));
  }
};

// The server on its own io thread, on TCP (port) or on a Unix socket (path).
struct Served {
  Feed feed;
  boost::asio::io_context io;
  std::unique_ptr<serve::Server> server;
  std::thread thread;
  unsigned short port = 0;

  explicit Served(const std::string& token, const std::filesystem::path& unix_path = {}) {
    serve::ServerOptions opt;
    opt.port = 0;
    opt.token = token;
    server = std::make_unique<serve::Server>(io, feed, opt);
    if (unix_path.empty()) {
      auto ep = server->listen();
      REQUIRE(ep.has_value());
      port = ep->port();
    } else {
      auto ok = server->listen_unix(unix_path);
      INFO((ok ? "" : ok.error().message()));
      REQUIRE(ok.has_value());
    }
    thread = std::thread([this] { io.run(); });
  }
  ~Served() { stop(); }
  void stop() {
    if (!thread.joinable()) return;
    boost::asio::post(io, [this] { server->stop(); io.stop(); });
    thread.join();
  }
};

std::string over_unix(const std::string& path, const std::string& target, const std::string& headers = "") {
  Conn c(path);
  if (!c.ok()) return {};
  c.send("GET " + target + " HTTP/1.1\r\nHost: localhost:8080\r\nConnection: close\r\n" + headers + "\r\n");
  return c.read_response();
}

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st{};
  REQUIRE(::lstat(p.c_str(), &st) == 0);
  return st.st_mode;
}

}  // namespace

TEST_CASE("server auth: without the token every request gets 403 and nothing else") {
  Served s(kTok);
  for (const char* t : {"/", "/study/alpha", "/api/studies", "/api/studies/alpha", "/assets/live.js",
                        "/assets/render.js", "/assets/chart.js", "/nope", "/../etc/passwd", "/?token=",
                        "/?token=wrong", "/?token=5ecret"}) {
    INFO(t);
    auto res = get(s.port, t);
    CHECK(status_of(res) == 403);
    CHECK(header_of(res, "set-cookie").empty());
    CHECK(res.find("alpha") == std::string::npos);
    CHECK(body_of(res).find("token") != std::string::npos);  // says what is missing
  }
  CHECK(status_of(get_with(s.port, "/api/studies", "Cookie: dlsweep-serve=wrong\r\n")) == 403);
  CHECK(status_of(get_with(s.port, "/api/studies", "Authorization: token wrong\r\n")) == 403);
  CHECK(status_of(get(s.port, "/api/studies", "POST")) == 403);
  auto head = get(s.port, "/api/studies", "HEAD");
  CHECK(status_of(head) == 403);
  CHECK(body_of(head).empty());
  CHECK(s.feed.calls == 0);  // nothing reached the database side
}

TEST_CASE("server auth: ?token= sets the cookie, redirects a page, and the cookie gets in") {
  Served s(kTok);
  auto page = get(s.port, "/study/alpha?token=" + kTok + "&t=3");
  CHECK(status_of(page) == 303);
  CHECK(header_of(page, "location") == "/study/alpha?t=3");
  const std::string cookie = header_of(page, "set-cookie");
  CHECK(cookie == "dlsweep-serve=" + kTok + "; Path=/; HttpOnly; SameSite=Strict");  // Host: localhost
  auto index = get(s.port, "/?token=" + kTok);
  CHECK(status_of(index) == 303);
  CHECK(header_of(index, "location") == "/");
  // An API call with ?token= is answered at once (scripts, curl), with the cookie too.
  auto api = get(s.port, "/api/studies?token=" + kTok);
  CHECK(status_of(api) == 200);
  CHECK(body_of(api).find("alpha") != std::string::npos);
  CHECK_FALSE(header_of(api, "set-cookie").empty());
  // The cookie the browser sends back from now on.
  const std::string jar = "Cookie: " + cookie.substr(0, cookie.find(';')) + "\r\n";
  for (const char* t : {"/", "/study/alpha", "/api/studies", "/api/studies/alpha", "/assets/live.js"}) {
    INFO(t);
    auto res = get_with(s.port, t, jar);
    CHECK(status_of(res) == 200);
    CHECK(header_of(res, "set-cookie").empty());
  }
  CHECK(status_of(get_with(s.port, "/api/studies", "Authorization: token " + kTok + "\r\n")) == 200);
  CHECK(status_of(get_with(s.port, "/api/studies", "Authorization: Bearer " + kTok + "\r\n")) == 200);
  // With the token, the hardening answers as before.
  CHECK(status_of(get_with(s.port, "/api/studies", jar, "DELETE")) == 405);
  CHECK(status_of(get_with(s.port, "/assets/%2e%2e/x", jar)) == 400);
  CHECK(status_of(get_with(s.port, "/api/studies/beta", jar)) == 404);
  // The cookie's name carries the Host's port.
  Conn c(s.port);
  c.send("GET /?token=" + kTok + " HTTP/1.1\r\nHost: 127.0.0.1:8123\r\nConnection: close\r\n\r\n");
  CHECK(header_of(c.read_response(), "set-cookie").rfind("dlsweep-serve-8123=" + kTok + ";", 0) == 0);
}

TEST_CASE("server auth: without a token set (--no-token) everything is served") {
  Served s("");
  CHECK(status_of(get(s.port, "/api/studies")) == 200);
  CHECK(status_of(get(s.port, "/")) == 200);
  CHECK(header_of(get(s.port, "/?token=x"), "set-cookie").empty());
}

TEST_CASE("unix socket: mode 0600, served with the token rules, removed at stop") {
  TempDir dir;
  const auto sock = dir / "serve.sock";
  {
    Served s(kTok, sock);
    const mode_t m = mode_of(sock);
    CHECK(S_ISSOCK(m));
    CHECK((m & 07777) == 0600);
    CHECK(status_of(over_unix(sock, "/api/studies")) == 403);
    auto ok = over_unix(sock, "/api/studies?token=" + kTok);
    CHECK(status_of(ok) == 200);
    CHECK(header_of(ok, "set-cookie").rfind("dlsweep-serve-8080=", 0) == 0);
    CHECK(status_of(over_unix(sock, "/study/alpha", "Cookie: dlsweep-serve-8080=" + kTok + "\r\n")) == 200);
    // The Host guard holds on the socket too (DNS rebinding on the laptop's end of the tunnel).
    Conn c(sock.string());
    c.send("GET /api/studies?token=" + kTok + " HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    CHECK(status_of(c.read_response()) == 403);
    s.stop();
    CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(sock)));
  }
}

TEST_CASE("unix socket: whatever the umask, the file is 0600") {
  TempDir dir;
  const mode_t old = ::umask(0);
  auto made = serve::listen_unix_socket(dir / "open.sock", 4);
  ::umask(old);
  REQUIRE(made.has_value());
  CHECK((mode_of(dir / "open.sock") & 07777) == 0600);
  ::close(made->fd);
  serve::remove_unix_socket(*made);
  CHECK_FALSE(std::filesystem::exists(dir / "open.sock"));
}

TEST_CASE("unix socket: never replaces a non-socket file; replaces a stale socket; refuses a live one") {
  TempDir dir;
  std::ofstream(dir / "precious") << "data\n";
  auto r = serve::listen_unix_socket(dir / "precious", 4);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message().find("not a socket") != std::string::npos);
  CHECK(r.error().message().find((dir / "precious").string()) != std::string::npos);
  std::ifstream in(dir / "precious");
  std::string line;
  std::getline(in, line);
  CHECK(line == "data");  // untouched
  std::filesystem::create_directory(dir / "adir");
  CHECK_FALSE(serve::listen_unix_socket(dir / "adir", 4).has_value());
  std::filesystem::create_symlink(dir / "precious", dir / "link");
  CHECK_FALSE(serve::listen_unix_socket(dir / "link", 4).has_value());

  // A stale socket: bound, then its server gone (closed without unlinking).
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, (dir / "stale.sock").c_str(), sizeof a.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    ::close(fd);
  }
  auto stale = serve::listen_unix_socket(dir / "stale.sock", 4);
  INFO((stale ? "" : stale.error().message()));
  REQUIRE(stale.has_value());
  CHECK((mode_of(dir / "stale.sock") & 07777) == 0600);
  // Live now: a second server is refused and the first keeps its socket.
  auto second = serve::listen_unix_socket(dir / "stale.sock", 4);
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().message().find("another server") != std::string::npos);
  CHECK(std::filesystem::exists(std::filesystem::symlink_status(dir / "stale.sock")));
  ::close(stale->fd);
  serve::remove_unix_socket(*stale);

  const std::string too_long = (dir / std::string(120, 's')).string();
  auto tl = serve::listen_unix_socket(too_long, 4);
  REQUIRE_FALSE(tl.has_value());
  CHECK(tl.error().message().find("shorter path") != std::string::npos);
}
