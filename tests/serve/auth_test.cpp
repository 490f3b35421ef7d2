// The token of `dlsweep serve` as pure functions: drawing it, comparing it, reading it from
// --token-file (and every refusal's message), finding it in a request (query, cookie,
// Authorization header), and the verdict on a request.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "../db/db_test_support.hpp"
#include "serve/request_auth.hpp"
#include "serve/token.hpp"

using namespace dlsweep;
using namespace dlsweep::serve;
using dlsweep::db::testing::TempDir;

namespace {

std::filesystem::path write_file(const TempDir& dir, const std::string& name, const std::string& text, mode_t mode) {
  auto p = dir / name;
  std::ofstream(p) << text;
  REQUIRE(::chmod(p.c_str(), mode) == 0);
  return p;
}

const std::string kTok = "0123456789abcdef0123456789abcdef";

}  // namespace

TEST_CASE("token: generated tokens are 64 hex characters and differ") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = generate_token();
    REQUIRE(t.has_value());
    CHECK(t->size() == 64);
    CHECK(t->find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(*t);
  }
  CHECK(seen.size() == 100);
}

TEST_CASE("token: comparison is exact (constant-time, every byte)") {
  CHECK(tokens_equal(kTok, kTok));
  CHECK_FALSE(tokens_equal("", kTok));
  CHECK_FALSE(tokens_equal(kTok.substr(0, 31), kTok));  // a prefix
  CHECK_FALSE(tokens_equal(kTok + "0", kTok));          // longer
  std::string last = kTok;
  last.back() = 'e';
  CHECK_FALSE(tokens_equal(last, kTok));
  std::string first = kTok;
  first.front() = '1';
  CHECK_FALSE(tokens_equal(first, kTok));
  CHECK_FALSE(tokens_equal("", ""));  // no token set matches nothing
  CHECK_FALSE(tokens_equal("x", ""));
}

TEST_CASE("token file: a private file's token is read, one trailing newline dropped") {
  TempDir dir;
  auto p = write_file(dir, "tok", kTok + "\n", 0600);
  auto t = read_token_file(p);
  INFO((t ? "" : t.error().message()));
  REQUIRE(t.has_value());
  CHECK(*t == kTok);
  auto q = write_file(dir, "tok2", "Abc-._~xyz0123456789", 0400);
  REQUIRE(read_token_file(q).has_value());
}

TEST_CASE("token file: readable by group or others is refused, naming the file and chmod 600") {
  TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0660, 0606, 0620}) {
    auto p = write_file(dir, "tok", kTok, mode);
    auto t = read_token_file(p);
    INFO(mode);
    REQUIRE_FALSE(t.has_value());
    const std::string m = t.error().message();
    CHECK(m.find(p.string()) != std::string::npos);
    CHECK(m.find("chmod 600 " + p.string()) != std::string::npos);
    CHECK(m.find(kTok) == std::string::npos);  // the secret is never echoed
  }
}

TEST_CASE("token file: missing, a directory, a symlink, empty, short, or bad characters are refused") {
  TempDir dir;
  auto missing = read_token_file(dir / "nope");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message().find("nope") != std::string::npos);
  CHECK(missing.error().message().find("umask 077") != std::string::npos);  // how to make one

  std::filesystem::create_directory(dir / "d");
  ::chmod((dir / "d").c_str(), 0700);
  auto d = read_token_file(dir / "d");
  REQUIRE_FALSE(d.has_value());
  CHECK(d.error().message().find("not a regular file") != std::string::npos);

  auto real = write_file(dir, "real", kTok, 0600);
  std::filesystem::create_symlink(real, dir / "link");
  auto l = read_token_file(dir / "link");
  REQUIRE_FALSE(l.has_value());
  CHECK(l.error().message().find("symbolic link") != std::string::npos);

  for (const std::string& bad : {std::string(""), std::string("\n"), std::string("short"),
                                 std::string(300, 'a'), kTok + " x", kTok + "\n\n", "tok&en=" + kTok,
                                 "tok;en" + kTok, std::string("\xe2\x82\xac") + kTok}) {
    auto p = write_file(dir, "bad", bad, 0600);
    auto t = read_token_file(p);
    INFO(bad);
    CHECK_FALSE(t.has_value());
  }
}

TEST_CASE("request: the token in the query string, and the target without it") {
  CHECK(query_token("/?token=abc") == std::optional<std::string>("abc"));
  CHECK(query_token("/study/x?t=1&token=a%62c") == std::optional<std::string>("abc"));
  CHECK(query_token("/?token=") == std::optional<std::string>(""));
  CHECK_FALSE(query_token("/").has_value());
  CHECK_FALSE(query_token("/?tokens=abc").has_value());
  CHECK_FALSE(query_token("/?token=%zz").has_value());
  CHECK(strip_token("/?token=abc") == "/");
  CHECK(strip_token("/study/x?token=abc&t=1") == "/study/x?t=1");
  CHECK(strip_token("/study/x?t=1&token=abc&u=2") == "/study/x?t=1&u=2");
  CHECK(strip_token("/study/x") == "/study/x");
  CHECK(strip_token("/?token=a&token=b") == "/");
}

TEST_CASE("request: Cookie headers are parsed, values unquoted, junk skipped") {
  auto c = parse_cookies("a=1; dlsweep-serve-8080=xyz;b=\"q\" ;  noeq; =v; c=");
  REQUIRE(c.size() == 4);
  CHECK(c[0] == std::pair<std::string_view, std::string_view>("a", "1"));
  CHECK(c[1] == std::pair<std::string_view, std::string_view>("dlsweep-serve-8080", "xyz"));
  CHECK(c[2] == std::pair<std::string_view, std::string_view>("b", "q"));
  CHECK(c[3] == std::pair<std::string_view, std::string_view>("c", ""));
  CHECK(parse_cookies("").empty());
  CHECK(parse_cookies(";;;").empty());
}

TEST_CASE("request: the cookie's name follows the Host's port, and its attributes") {
  CHECK(cookie_name("localhost:8080") == "dlsweep-serve-8080");
  CHECK(cookie_name("127.0.0.1:8123") == "dlsweep-serve-8123");
  CHECK(cookie_name("[::1]:9000") == "dlsweep-serve-9000");
  CHECK(cookie_name("[::1]") == "dlsweep-serve");
  CHECK(cookie_name("localhost") == "dlsweep-serve");
  CHECK(cookie_name("") == "dlsweep-serve");
  CHECK(cookie_name("localhost:80x") == "dlsweep-serve");
  CHECK(set_cookie("localhost:8080", "T") == "dlsweep-serve-8080=T; Path=/; HttpOnly; SameSite=Strict");
}

TEST_CASE("request: Authorization header schemes") {
  CHECK(authorization_token("token abc") == std::optional<std::string_view>("abc"));
  CHECK(authorization_token("Bearer abc") == std::optional<std::string_view>("abc"));
  CHECK(authorization_token("TOKEN  abc ") == std::optional<std::string_view>("abc"));
  CHECK_FALSE(authorization_token("Basic YWJj").has_value());
  CHECK_FALSE(authorization_token("abc").has_value());
  CHECK_FALSE(authorization_token("").has_value());
}

TEST_CASE("request: the verdict") {
  auto verdict = [](std::string_view target, std::vector<std::string_view> cookies = {},
                    std::string_view authz = {}) { return authorize(kTok, AuthRequest{target, cookies, authz}); };
  CHECK(verdict("/").verdict == AuthVerdict::refused);
  CHECK(verdict("/?token=wrong").verdict == AuthVerdict::refused);
  CHECK(verdict("/?token=" + kTok.substr(0, 31)).verdict == AuthVerdict::refused);
  auto q = verdict("/study/a?token=" + kTok + "&t=5");
  CHECK(q.verdict == AuthVerdict::allowed_by_query);
  CHECK(q.clean_target == "/study/a?t=5");
  CHECK(verdict("/api/studies", {"x=1; dlsweep-serve-8080=" + kTok}).verdict == AuthVerdict::allowed);
  CHECK(verdict("/api/studies", {"dlsweep-serve=" + kTok}).verdict == AuthVerdict::allowed);
  // Another server's cookie of the same origin (a different port) with its own token does
  // not get in, and neither does our token under a foreign cookie name.
  CHECK(verdict("/api/studies", {"dlsweep-serve-9000=other"}).verdict == AuthVerdict::refused);
  CHECK(verdict("/api/studies", {"session=" + kTok}).verdict == AuthVerdict::refused);
  // A wrong cookie next to the right one (two servers' cookies sent to one origin).
  CHECK(verdict("/api/studies", {"dlsweep-serve-9000=other; dlsweep-serve-8080=" + kTok}).verdict ==
        AuthVerdict::allowed);
  CHECK(verdict("/api/studies", {"a=1", "dlsweep-serve-8080=" + kTok}).verdict == AuthVerdict::allowed);
  CHECK(verdict("/api/studies", {}, "token " + kTok).verdict == AuthVerdict::allowed);
  CHECK(verdict("/api/studies", {}, "Bearer " + kTok).verdict == AuthVerdict::allowed);
  CHECK(verdict("/api/studies", {}, "Basic " + kTok).verdict == AuthVerdict::refused);
  // A wrong ?token= with a valid cookie: the cookie lets it in.
  CHECK(verdict("/?token=wrong", {"dlsweep-serve-8080=" + kTok}).verdict == AuthVerdict::allowed);
}
