// Another local user on the same machine (the shared login node's case): created with useradd,
// it runs curl through runuser. Against the real `dlsweep serve` it gets 403 without the token
// (and 200 with it: the token is the only barrier), and through the --unix-socket it cannot
// connect at all, with or without the token: the socket's mode 0600 keeps it out, not the
// directory (the user can see the socket file). Needs root (other_user_main.cpp SKIPs, exit
// 77, otherwise).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include "../e2e/run_command.hpp"
#include "serve_support.hpp"

namespace fs = std::filesystem;
using namespace dlsweep::serve::testing;
using dlsweep::db::testing::TempDir;

namespace {

constexpr const char* kUser = "dlsweep-serve-other";

// The other user exists for the lifetime of this object (removed if it created it).
struct OtherUser {
  bool created = false;
  OtherUser() {
    if (run_command({"id", "-u", kUser}).exit_code != 0) {
      auto r = run_command({"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", kUser});
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      created = true;
    }
  }
  ~OtherUser() {
    if (created) run_command({"userdel", kUser});
  }
  std::vector<std::string> as() const { return {"runuser", "-u", kUser, "--"}; }
};

}  // namespace

TEST_CASE("other user: 403 without the token over TCP; the socket refuses it outright") {
  OtherUser other;
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);  // the other user may walk in: only the socket's own mode is left
  make_study_db(dir / "sweep.db");

  Serving tcp(dir.path(), "tcp", dir / "sweep.db", {"--port", "0"});
  INFO(tcp.log());
  REQUIRE(tcp.url.ready);
  for (const char* t : {"/", "/study/alpha", "/api/studies", "/api/studies/alpha", "/assets/live.js"}) {
    INFO(t);
    auto a = curl({tcp.base() + t}, other.as());
    INFO(a.err);
    CHECK(a.exit_code == 0);
    CHECK(a.status == 403);
    CHECK(a.body.find("alpha") == std::string::npos);
  }
  CHECK(curl({tcp.base() + "/api/studies?token=guess"}, other.as()).status == 403);
  CHECK(curl({"-H", "Cookie: dlsweep-serve-" + std::to_string(tcp.url.port) + "=guess", tcp.base() + "/api/studies"},
             other.as())
            .status == 403);
  // The same user with the token gets in: the token, nothing else, kept it out above.
  CHECK(curl({tcp.base() + "/api/studies?token=" + tcp.url.token}, other.as()).status == 200);
  tcp.child->signal(SIGTERM);
  CHECK(tcp.child->wait(60) == 0);

  const auto sock = dir / "serve.sock";
  Serving unix_served(dir.path(), "sock", dir / "sweep.db", {"--unix-socket", sock.string()});
  INFO(unix_served.log());
  REQUIRE(unix_served.url.ready);
  CHECK((file_mode(sock) & 07777) == 0600);
  CHECK(run_command({"runuser", "-u", kUser, "--", "test", "-S", sock.string()}).exit_code == 0);  // it sees the file
  for (const std::string& q : {std::string(), "?token=" + unix_served.url.token}) {
    auto a = curl({"--unix-socket", sock.string(), "http://localhost/api/studies" + q}, other.as());
    INFO(q << ": curl exit " << a.exit_code << ", " << a.err);
    CHECK(a.exit_code == 7);  // could not connect
    CHECK(a.status == 0);
    CHECK(a.body.find("alpha") == std::string::npos);
  }
  // Why: connect(2) itself is refused with EACCES (curl only says it could not connect).
  auto why = run_command({"runuser", "-u", kUser, "--", "/usr/bin/python3", "-c",
                          "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])", sock.string()});
  INFO(why.err);
  CHECK(why.exit_code != 0);
  CHECK(why.err.find("PermissionError") != std::string::npos);
  // Its owner connects.
  CHECK(curl({"--unix-socket", sock.string(), "http://localhost/api/studies?token=" + unix_served.url.token}).status ==
        200);
  unix_served.child->signal(SIGTERM);
  CHECK(unix_served.child->wait(60) == 0);
}
