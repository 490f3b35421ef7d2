// The real `dlsweep serve` with its token and its Unix socket, checked with curl as a user
// would: 403 without the token, 200 with ?token=, with the cookie it sets and over the socket
// (mode 0600); --token-file (its permission refusal), --no-token (its warning), and the
// socket path's refusals.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "serve_support.hpp"

namespace fs = std::filesystem;
using namespace dlsweep::serve::testing;
using dlsweep::db::testing::TempDir;

TEST_CASE("serve cli: a token by default; 403 without it, 200 with ?token= and with the cookie") {
  TempDir dir;
  make_study_db(dir / "sweep.db");
  Serving s(dir.path(), "serve", dir / "sweep.db", {"--port", "0"});
  INFO(s.log());
  REQUIRE(s.url.ready);
  CHECK(s.url.token.size() == 64);  // drawn from getrandom(2), printed in the URL
  const std::string base = s.base();

  for (const char* t : {"/", "/study/alpha", "/api/studies", "/api/studies/alpha", "/assets/render.js"}) {
    INFO(t);
    auto a = curl({base + t});
    CHECK(a.status == 403);
    CHECK(a.body.find("alpha") == std::string::npos);
  }
  CHECK(curl({base + "/api/studies?token=" + std::string(64, '0')}).status == 403);

  auto with_query = curl({base + "/api/studies?token=" + s.url.token});
  CHECK(with_query.status == 200);
  CHECK(with_query.body.find("\"alpha\"") != std::string::npos);

  // A browser's way: the printed URL sets the cookie and drops the token from the address.
  const auto jar = dir / "cookies.txt";
  auto first = curl({"-c", jar.string(), "-o", "/dev/null", base + "/?token=" + s.url.token});
  CHECK(first.status == 303);
  const std::string jar_text = slurp(jar);
  CHECK(jar_text.find("#HttpOnly_127.0.0.1") != std::string::npos);
  CHECK(jar_text.find("dlsweep-serve-" + std::to_string(s.url.port)) != std::string::npos);
  auto by_cookie = curl({"-b", jar.string(), base + "/api/studies/alpha"});
  CHECK(by_cookie.status == 200);
  CHECK(by_cookie.body.find("\"alpha\"") != std::string::npos);
  CHECK(curl({"-b", jar.string(), base + "/study/alpha"}).status == 200);
  // -L follows the redirect: the page, at the URL without the token.
  auto followed = curl({"-L", "-c", (dir / "jar2").string(), "-b", (dir / "jar2").string(), "-w",
                        "%{url_effective}\n%{http_code}", base + "/study/alpha?token=" + s.url.token});
  CHECK(followed.status == 200);
  CHECK(followed.body.ends_with(base + "/study/alpha"));
  CHECK(curl({"-H", "Authorization: token " + s.url.token, base + "/api/studies"}).status == 200);

  s.child->signal(SIGTERM);
  CHECK(s.child->wait(60) == 0);
}

TEST_CASE("serve cli: --unix-socket serves on a mode-0600 socket, and removes it at exit") {
  TempDir dir;
  make_study_db(dir / "sweep.db");
  const auto sock = dir / "serve.sock";
  Serving s(dir.path(), "sock", dir / "sweep.db", {"--unix-socket", sock.string()});
  INFO(s.log());
  REQUIRE(s.url.ready);
  CHECK(s.url.port == 0);
  CHECK(s.url.token.size() == 64);
  const mode_t m = file_mode(sock);
  CHECK(S_ISSOCK(m));
  CHECK((m & 07777) == 0600);
  CHECK(slurp(s.out).find("ssh -N -L 8080:" + sock.string()) != std::string::npos);  // the tunnel to type
  CHECK(curl({"--unix-socket", sock.string(), "http://localhost/api/studies"}).status == 403);
  auto ok = curl({"--unix-socket", sock.string(), "http://localhost/api/studies?token=" + s.url.token});
  CHECK(ok.status == 200);
  CHECK(ok.body.find("\"alpha\"") != std::string::npos);
  // Through the port an ssh -L tunnel gives the browser (Host: localhost:8080).
  CHECK(curl({"--unix-socket", sock.string(), "-H", "Host: localhost:8080",
              "http://localhost/study/alpha?token=" + s.url.token})
            .status == 303);
  s.child->signal(SIGTERM);
  CHECK(s.child->wait(60) == 0);
  CHECK_FALSE(fs::exists(fs::symlink_status(sock)));

  // A stale socket (a server killed with -9 leaves one) is replaced.
  {
    Serving k(dir.path(), "killed", dir / "sweep.db", {"--unix-socket", sock.string()});
    REQUIRE(k.url.ready);
    k.child->signal(SIGKILL);
    k.child->wait(60);
  }
  CHECK(fs::exists(fs::symlink_status(sock)));
  Serving again(dir.path(), "again", dir / "sweep.db", {"--unix-socket", sock.string()});
  INFO(again.log());
  REQUIRE(again.url.ready);
  CHECK(curl({"--unix-socket", sock.string(), "http://localhost/api/studies?token=" + again.url.token}).status == 200);
  // ... but a live one is not: a second server on the same path is refused.
  auto second = run_dlsweep(dir / "sweep.db", {"serve", "--unix-socket", sock.string()});
  CHECK(second.exit_code == 2);
  CHECK(second.err.find("another server") != std::string::npos);
  again.child->signal(SIGTERM);
  CHECK(again.child->wait(60) == 0);
}

TEST_CASE("serve cli: a relative --unix-socket path is printed absolute (ssh needs one)") {
  TempDir dir;
  make_study_db(dir / "sweep.db");
  Serving s(dir.path(), "rel", dir / "sweep.db", {"--unix-socket", "rel.sock"}, dir.path());
  INFO(s.log());
  REQUIRE(s.url.ready);
  CHECK(slurp(s.out).find("ssh -N -L 8080:" + (dir / "rel.sock").string() + " ") != std::string::npos);
  CHECK((file_mode(dir / "rel.sock") & 07777) == 0600);
  s.child->signal(SIGTERM);
  CHECK(s.child->wait(60) == 0);
}

TEST_CASE("serve cli: --unix-socket never replaces a file that is not a socket") {
  TempDir dir;
  make_study_db(dir / "sweep.db");
  std::ofstream(dir / "notes.txt") << "keep me\n";
  auto r = run_dlsweep(dir / "sweep.db", {"serve", "--unix-socket", (dir / "notes.txt").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("not a socket") != std::string::npos);
  CHECK(r.err.find((dir / "notes.txt").string()) != std::string::npos);
  CHECK(slurp(dir / "notes.txt") == "keep me\n");
  auto both = run_dlsweep(dir / "sweep.db", {"serve", "--unix-socket", (dir / "s.sock").string(), "--port", "9"});
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("excludes") != std::string::npos);
}

TEST_CASE("serve cli: --token-file refuses a file others can read, and serves with a private one") {
  TempDir dir;
  make_study_db(dir / "sweep.db");
  const auto tok = dir / "token";
  const std::string secret = "my-own-secret-token-0123456789";
  std::ofstream(tok) << secret << "\n";
  ::chmod(tok.c_str(), 0644);
  auto r = run_dlsweep(dir / "sweep.db", {"serve", "--port", "0", "--token-file", tok.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(tok.string()) != std::string::npos);
  CHECK(r.err.find("chmod 600 " + tok.string()) != std::string::npos);
  CHECK(r.err.find(secret) == std::string::npos);

  ::chmod(tok.c_str(), 0600);
  Serving s(dir.path(), "file", dir / "sweep.db", {"--port", "0", "--token-file", tok.string()});
  INFO(s.log());
  REQUIRE(s.url.ready);
  CHECK(s.url.token == "TOKEN");                            // a placeholder: the file's content stays out of logs
  CHECK(slurp(s.out).find(secret) == std::string::npos);
  CHECK(curl({s.base() + "/api/studies"}).status == 403);
  CHECK(curl({s.base() + "/api/studies?token=" + secret}).status == 200);
  s.child->signal(SIGTERM);
  CHECK(s.child->wait(60) == 0);

  auto both = run_dlsweep(dir / "sweep.db", {"serve", "--no-token", "--token-file", tok.string()});
  CHECK(both.exit_code == 2);
}

TEST_CASE("serve cli: --no-token serves everyone, with a warning on stderr") {
  TempDir dir;
  make_study_db(dir / "sweep.db");
  Serving s(dir.path(), "open", dir / "sweep.db", {"--port", "0", "--no-token"});
  INFO(s.log());
  REQUIRE(s.url.ready);
  CHECK(s.url.token.empty());
  CHECK(curl({s.base() + "/api/studies"}).status == 200);
  s.child->signal(SIGTERM);
  CHECK(s.child->wait(60) == 0);
  const std::string err = slurp(s.err);
  CHECK(err.find("warning: --no-token") != std::string::npos);
  CHECK(err.find("every user of this machine") != std::string::npos);
}
