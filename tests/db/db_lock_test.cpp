// db_lock_test.cpp — what a failed database lock says, for each errno fcntl(F_SETLK) gives
// (db/db_lock.hpp's lock_outcome: the errno injected), and DB.lock's "host pid".
#include <catch2/catch.hpp>

#include <cerrno>

#include "db/db_lock.hpp"

using namespace dlsweep::db;

namespace {
const FsKind kExt4 = classify_fs_magic(0xEF53), kLustre = classify_fs_magic(0x0BD00BD0),
             kNfs = classify_fs_magic(0x6969), kFuse = classify_fs_magic(0x65735546);
}

TEST_CASE("lock file text: host and pid, written and read back") {
  CHECK(lock_file_text("node17", 4242) == "node17 4242\n");
  auto h = parse_lock_file("node17 4242\n");
  REQUIRE(h);
  CHECK(h->host == "node17");
  CHECK(h->pid == 4242);
  auto old = parse_lock_file("4242\n");  // an older dlsweep wrote the pid alone
  REQUIRE(old);
  CHECK(old->host.empty());
  CHECK(old->pid == 4242);
  CHECK_FALSE(parse_lock_file(""));
  CHECK_FALSE(parse_lock_file("node17"));
  CHECK_FALSE(parse_lock_file("node17 -3"));
}

TEST_CASE("lock_outcome: taken") { CHECK(lock_outcome(0, 0, "s.db", "s.db.lock", {}, "h", kExt4).has_value()); }

TEST_CASE("lock_outcome: a study's lock names the study and its orchestrator, and says other studies may run") {
  auto elsewhere = lock_outcome(-1, EAGAIN, "s.db", "s.db.locks/bs.lock", LockHolder{"login2", 977}, "node17", kNfs, "bs");
  REQUIRE_FALSE(elsewhere.has_value());
  const auto m = elsewhere.error().message();
  CHECK(m.find("another dlsweep orchestrator is driving study 'bs' of this database (pid 977 on host login2)") !=
        std::string::npos);
  CHECK(m.find("`dlsweep --db s.db cancel bs`, or end it on login2") != std::string::npos);
  CHECK(m.find("other studies of this database can run beside it") != std::string::npos);
  auto here = lock_outcome(-1, EACCES, "s.db", "s.db.locks/bs.lock", LockHolder{"node17", 12}, "node17", kExt4, "bs");
  CHECK(here.error().message().find("driving study 'bs' of this database (pid 12 on this host, node17)") !=
        std::string::npos);
  // Not a holder: the filesystem's failure reads the same as for the database's lock.
  auto nolock = lock_outcome(-1, ENOLCK, "s.db", "s.db.locks/bs.lock", std::nullopt, "node17", kNfs, "bs");
  CHECK(nolock.error().message().find("no working POSIX locks") != std::string::npos);
}

TEST_CASE("lock_outcome: EAGAIN/EACCES name the orchestrator that holds it, host and pid") {
  for (int err : {EAGAIN, EACCES}) {
    INFO(err);
    CHECK(classify_lock_errno(err) == LockFailure::held);
    auto elsewhere = lock_outcome(-1, err, "s.db", "s.db.lock", LockHolder{"login2", 977}, "node17", kNfs);
    REQUIRE_FALSE(elsewhere.has_value());
    const auto m = elsewhere.error().message();
    CHECK(m.find("another dlsweep orchestrator is driving this database") != std::string::npos);
    CHECK(m.find("pid 977 on host login2") != std::string::npos);
    auto here = lock_outcome(-1, err, "s.db", "s.db.lock", LockHolder{"node17", 977}, "node17", kExt4);
    CHECK(here.error().message().find("pid 977 on this host") != std::string::npos);
    auto pid_only = lock_outcome(-1, err, "s.db", "s.db.lock", LockHolder{"", 977}, "node17", kExt4);
    CHECK(pid_only.error().message().find("driving this database (pid 977)") != std::string::npos);
    auto unknown = lock_outcome(-1, err, "s.db", "s.db.lock", std::nullopt, "node17", kExt4);
    CHECK(unknown.error().message().find("another dlsweep orchestrator") != std::string::npos);
  }
}

TEST_CASE("lock_outcome: ENOLCK/ENOSYS/EOPNOTSUPP/EINVAL are a filesystem without locks, named with its fix") {
  for (int err : {ENOLCK, ENOSYS, EOPNOTSUPP, EINVAL}) {
    INFO(err);
    CHECK(classify_lock_errno(err) == LockFailure::unsupported);
    auto lus = lock_outcome(-1, err, "s.db", "/lus/s.db.lock", std::nullopt, "node17", kLustre);
    REQUIRE_FALSE(lus.has_value());
    const auto m = lus.error().message();
    CHECK(m.find("another dlsweep orchestrator") == std::string::npos);
    CHECK(m.find("lustre") != std::string::npos);
    CHECK(m.find("no working POSIX locks") != std::string::npos);
    CHECK(m.find("-o flock") != std::string::npos);
    CHECK(m.find("/lus/s.db.lock") != std::string::npos);
    auto nfs = lock_outcome(-1, err, "s.db", "s.db.lock", std::nullopt, "node17", kNfs);
    CHECK(nfs.error().message().find("lockd") != std::string::npos);
    auto fuse = lock_outcome(-1, err, "s.db", "s.db.lock", std::nullopt, "node17", kFuse);
    CHECK(fuse.error().message().find("fuse") != std::string::npos);
  }
}

TEST_CASE("lock_outcome: any other errno is said as it is") {
  CHECK(classify_lock_errno(EIO) == LockFailure::other);
  auto io = lock_outcome(-1, EIO, "s.db", "s.db.lock", LockHolder{"x", 1}, "node17", kExt4);
  REQUIRE_FALSE(io.has_value());
  CHECK(io.error().message().find("cannot lock the database") != std::string::npos);
  CHECK(io.error().message().find("another dlsweep orchestrator") == std::string::npos);
}
