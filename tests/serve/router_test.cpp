// The route table of `dlsweep serve` as a pure function: methods, traversal, bad targets.
#include <catch2/catch.hpp>

#include "serve/http_router.hpp"

using dlsweep::serve::percent_decode;
using dlsweep::serve::route;
using dlsweep::serve::RouteKind;

TEST_CASE("router: the fixed routes") {
  CHECK(route("GET", "/").kind == RouteKind::index_page);
  CHECK(route("HEAD", "/").kind == RouteKind::index_page);
  CHECK(route("GET", "/?t=123").kind == RouteKind::index_page);
  CHECK(route("GET", "/api/studies").kind == RouteKind::studies_api);
  CHECK(route("GET", "/api/studies/").kind == RouteKind::studies_api);
  auto s = route("GET", "/api/studies/my%20study?t=5");
  CHECK(s.kind == RouteKind::study_api);
  CHECK(s.arg == "my study");
  auto p = route("GET", "/study/lr-scaling");
  CHECK(p.kind == RouteKind::study_page);
  CHECK(p.arg == "lr-scaling");
  auto a = route("GET", "/assets/live.js");
  CHECK(a.kind == RouteKind::asset);
  CHECK(a.arg == "live.js");
  // A study name may hold an encoded slash: it stays one name, never a path.
  auto slash = route("GET", "/api/studies/a%2Fb");
  CHECK(slash.kind == RouteKind::study_api);
  CHECK(slash.arg == "a/b");
}

TEST_CASE("router: every method but GET and HEAD is 405") {
  for (const char* m : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "BREW", "get", ""}) {
    INFO(m);
    auto r = route(m, "/api/studies");
    CHECK(r.kind == RouteKind::error);
    CHECK(r.status == 405);
  }
}

TEST_CASE("router: path traversal never reaches a route") {
  for (const char* t : {"/../etc/passwd", "/assets/../../etc/passwd", "/assets/%2e%2e/%2e%2e/etc/passwd",
                        "/assets/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/api/studies/..", "/api/studies/%2e%2e",
                        "/study/..%2F..%2Fsecret", "/assets/..%5c..%5cwin.ini", "/assets\\..\\x", "/./",
                        "/api/./studies"}) {
    INFO(t);
    auto r = route("GET", t);
    CHECK(r.kind == RouteKind::error);
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
  }
  // Asset names are a closed alphabet: nothing that could be a path or a hidden file.
  for (const char* t : {"/assets/.htaccess", "/assets/%2Fetc%2Fpasswd", "/assets/a%00.js", "/assets/A.JS"}) {
    INFO(t);
    auto r = route("GET", t);
    CHECK(r.kind == RouteKind::error);
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
  }
}

TEST_CASE("router: malformed targets are 4xx") {
  for (const char* t : {"", "*", "api/studies", "http://evil.example/", "/%", "/%4", "/%zz", "/a%00b", "/a%0ab",
                        "/a b", "/\x01", "/\x7f", "/\xc3\xa9"}) {
    INFO(t);
    auto r = route("GET", t);
    CHECK(r.kind == RouteKind::error);
    CHECK(r.status >= 400);
    CHECK(r.status < 500);
  }
  CHECK(route("GET", std::string(5000, '/')).status == 414);
  CHECK(route("GET", "/nope").status == 404);
  CHECK(route("GET", "//api//studies").status == 404);
  CHECK(route("GET", "/api/studies/a/b").status == 404);
}

TEST_CASE("router: percent_decode") {
  std::string out;
  CHECK(percent_decode("a%20b%2F", out));
  CHECK(out == "a b/");
  CHECK_FALSE(percent_decode("%", out));
  CHECK_FALSE(percent_decode("%2", out));
  CHECK_FALSE(percent_decode("%g0", out));
  CHECK_FALSE(percent_decode("%00", out));
  CHECK_FALSE(percent_decode("%1f", out));
  CHECK(percent_decode("%C3%A9", out));
  CHECK(out == "\xc3\xa9");
}
