// The database lock (db/orchestrator_lock.cpp lock_database): one orchestrator per database,
// and the lock dies with its process even while a child it started lives on (a trial on its
// way to exec, or one that never execs). With flock, the child shared the lock: a resume
// started right after kill -9 of the orchestrator was refused (seen in CI).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "db/orchestrator_lock.hpp"

namespace fs = std::filesystem;
using dlsweep::db::lock_database;

namespace {

fs::path fresh_db(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("dlsweep-lock-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir / "sweep.db";
}

}  // namespace

TEST_CASE("database lock: a second holder is refused, naming the holder's pid") {
  const fs::path db = fresh_db("second");
  int ready[2], done[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(done) == 0);
  pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    ::close(done[1]);
    char c = lock_database(db.string()) ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);  // holds the lock until the test lets go
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  auto second = lock_database(db.string());
  REQUIRE_FALSE(second.has_value());
  CHECK_THAT(second.error().message(), Catch::Contains("another dlsweep orchestrator is driving this database"));
  CHECK_THAT(second.error().message(), Catch::Contains("pid " + std::to_string(holder) + " on this host"));
  // The holder wrote "host pid" into the lock file: what a second orchestrator on another
  // host reads to name it (db/db_lock.hpp).
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  std::ifstream in(db.string() + ".lock");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == std::string(host) + " " + std::to_string(holder) + "\n");
  ::close(done[1]);
  REQUIRE(::waitpid(holder, nullptr, 0) == holder);
  auto after = lock_database(db.string());
  CHECK(after.has_value());
  if (after) ::close(*after);
  fs::remove_all(db.parent_path());
}

TEST_CASE("database lock: it dies with its holder even while the holder's child lives on") {
  const fs::path db = fresh_db("child");
  int ready[2], done[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(done) == 0);
  pid_t holder = ::fork();
  REQUIRE(holder >= 0);
  if (holder == 0) {
    if (!lock_database(db.string())) ::_exit(1);
    pid_t child = ::fork();  // shares the holder's fds, as a trial does until it execs
    if (child == 0) {
      ::close(done[1]);
      char c = 'y';
      (void)!::write(ready[1], &c, 1);
      (void)!::read(done[0], &c, 1);
      ::_exit(0);
    }
    ::_exit(child > 0 ? 0 : 1);  // the orchestrator dies; its child lives on
  }
  int status = 0;
  REQUIRE(::waitpid(holder, &status, 0) == holder);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);  // the child is alive and holds the fd
  auto next = lock_database(db.string());
  INFO((next ? std::string() : next.error().message()));
  CHECK(next.has_value());
  if (next) ::close(*next);
  ::close(done[1]);
  fs::remove_all(db.parent_path());
}
