// The database's locks (db/orchestrator_lock.cpp): lock_database (DB.lock, exclusive) and
// lock_study (DB.lock shared by every writer, and the study's own DB.locks/STUDY.lock): one
// orchestrator per study, several studies' orchestrators at once; each lock dies with its process even while a child it started lives on (a trial on its
// way to exec, or one that never execs). With flock, the child shared the lock: a resume
// started right after kill -9 of the orchestrator was refused (seen in CI).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>
#include <string>

#include "db/orchestrator_lock.hpp"

namespace fs = std::filesystem;
using dlsweep::db::database_lock_state;
using dlsweep::db::lock_database;
using dlsweep::db::lock_study;
using dlsweep::db::LockHolder;
using dlsweep::db::LockState;
using dlsweep::db::release_study_lock;
using dlsweep::db::study_lock_state;

namespace {

fs::path fresh_db(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("dlsweep-lock-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir / "sweep.db";
}

// A child process that takes locks (`take` returns 'y' when it got them all) and holds
// them until release() (or its destructor) lets it exit.
std::vector<int> live_done_fds;  // the parent's ends of live holders' pipes: a later child closes its copies
struct Holder {
  pid_t pid = -1;
  int done_w = -1;
  bool took = false;
  template <class Take>
  explicit Holder(Take take) {
    int ready[2], done[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(done) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(done[1]);
      for (int fd : live_done_fds) ::close(fd);  // else an earlier holder never sees its end
      char c = take() ? 'y' : 'n';
      (void)!::write(ready[1], &c, 1);
      (void)!::read(done[0], &c, 1);
      ::_exit(0);
    }
    ::close(done[0]);
    ::close(ready[1]);
    done_w = done[1];
    live_done_fds.push_back(done_w);
    char c = 0;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
    took = c == 'y';
  }
  void release() {
    if (pid < 0) return;
    std::erase(live_done_fds, done_w);
    ::close(done_w);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Holder() { release(); }
};

}  // namespace

TEST_CASE("study locks: three studies at once, each by one process; the same study twice is refused naming it") {
  const fs::path db = fresh_db("studies");
  const std::string d = db.string();
  CHECK(database_lock_state(d) == LockState::free);
  Holder a([&] { return lock_study(d, "a").has_value(); });
  Holder b([&] { return lock_study(d, "b").has_value(); });
  Holder c([&] { return lock_study(d, "c").has_value(); });
  REQUIRE(a.took);
  REQUIRE(b.took);
  REQUIRE(c.took);
  // A reader sees a writer (it must not open the file immutable), whichever holds the lock.
  CHECK(database_lock_state(d) == LockState::held);
  CHECK(database_lock_state(d, /*exclusive_only=*/true) == LockState::free);
  std::optional<LockHolder> who;
  CHECK(study_lock_state(d, "b", &who) == LockState::held);
  REQUIRE(who);
  CHECK(who->pid == b.pid);
  CHECK(study_lock_state(d, "other") == LockState::free);
  // The same study from another process: refused, naming the study and its holder.
  auto second = lock_study(d, "b");
  REQUIRE_FALSE(second.has_value());
  CHECK_THAT(second.error().message(),
             Catch::Contains("another dlsweep orchestrator is driving study 'b' of this database (pid " +
                             std::to_string(b.pid) + " on this host"));
  CHECK_THAT(second.error().message(), Catch::Contains("cancel b"));
  // Refused, it holds nothing: another process still sees only a, b and c.
  {
    Holder probe([&] { return study_lock_state(d, "b") == LockState::held; });
    CHECK(probe.took);
  }
  // A whole-database (exclusive) taker is refused while any study runs.
  auto whole = lock_database(d);
  REQUIRE_FALSE(whole.has_value());
  CHECK_THAT(whole.error().message(), Catch::Contains("another dlsweep orchestrator is driving this database"));
  // b's holder dies: b is free (its resume takes it), a and c are still held.
  b.release();
  CHECK(study_lock_state(d, "b") == LockState::free);
  CHECK(study_lock_state(d, "a") == LockState::held);
  CHECK(database_lock_state(d) == LockState::held);
  auto resumed = lock_study(d, "b");
  INFO((resumed ? std::string() : resumed.error().message()));
  CHECK(resumed.has_value());
  if (resumed) release_study_lock(*resumed);
  a.release();
  c.release();
  CHECK(database_lock_state(d) == LockState::free);
  fs::remove_all(db.parent_path());
}

TEST_CASE("study locks: an exclusive holder of the database (snapshot mode, an older dlsweep) keeps every study out") {
  const fs::path db = fresh_db("exclusive");
  const std::string d = db.string();
  Holder old([&] { return lock_database(d).has_value(); });
  REQUIRE(old.took);
  CHECK(database_lock_state(d, /*exclusive_only=*/true) == LockState::held);
  auto s = lock_study(d, "a");
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.error().message(), Catch::Contains("another dlsweep orchestrator is driving this database (pid " +
                                                  std::to_string(old.pid)));
  old.release();
  auto now = lock_study(d, "a");
  CHECK(now.has_value());
  if (now) release_study_lock(*now);
  fs::remove_all(db.parent_path());
}

TEST_CASE("study locks: releasing one study keeps the database held for the process's other study") {
  const fs::path db = fresh_db("release");
  const std::string d = db.string();
  auto a = lock_study(d, "a");
  auto b = lock_study(d, "b");
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  release_study_lock(*a);
  {
    Holder other([&] {
      return study_lock_state(d, "a") == LockState::free && study_lock_state(d, "b") == LockState::held &&
             database_lock_state(d) == LockState::held;
    });
    CHECK(other.took);
  }
  release_study_lock(*b);
  {
    Holder other([&] { return database_lock_state(d) == LockState::free && study_lock_state(d, "b") == LockState::free; });
    CHECK(other.took);
  }
  fs::remove_all(db.parent_path());
}

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
