// A signal always wins (issue "The site's rules", item 2), on the local backend: SIGTERM
// ends the orchestrator within a few seconds even while another process holds the
// database's write lock (SQLite's busy wait gives up on the signal; before, every write
// waited its 5 s out), and the database it leaves is consistent for `status` and `resume`.
// The Slurm waits (sbatch retries, a hung squeue) are in slurm_limits_test.cpp.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

/// A child process that holds an exclusive transaction on `db` until killed; `ready` is
/// written once it holds it.
pid_t hold_write_lock(const fs::path& db, const fs::path& ready) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    sqlite3* h = nullptr;
    if (sqlite3_open(db.c_str(), &h) != SQLITE_OK) ::_exit(2);
    sqlite3_busy_timeout(h, 30000);
    if (sqlite3_exec(h, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) != SQLITE_OK) ::_exit(3);
    std::ofstream(ready) << "held";
    ::sleep(300);
    ::_exit(0);
  }
  return pid;
}

}  // namespace

TEST_CASE("signal: SIGTERM while another process holds the database lock ends the orchestrator at once",
          "[signal]") {
  auto dir = fresh_dir("signal-db-busy");
  // Each trial sleeps until quick.flag exists, then reports and exits: the resumed study
  // finishes at once.
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: busy
backend: {{kind: local, max_concurrent: 2}}
trial:
  command: [/bin/sh, -c, "while [ ! -e '{}' ]; do sleep 0.2; done; echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
space: {{x: [1, 2, 3]}}
)", (dir / "quick.flag").string());
  auto db = dir / "sweep.db";
  int pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"}, dir / "err.txt");
  REQUIRE(pid > 0);
  REQUIRE(test_support::wait_until([&] {
    return run_dlsweep(db, {"query", "SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'", "--format", "csv"}, dir).out ==
           "COUNT(*)\n2\n";
  }, std::chrono::seconds(60)));
  pid_t locker = hold_write_lock(db, dir / "locked");
  REQUIRE(wait_for(dir / "locked"));
  const auto t0 = Clock::now();
  ::kill(pid, SIGTERM);
  int status = 0;
  bool ended = test_support::wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; },
                                        std::chrono::seconds(120), std::chrono::milliseconds(20));
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ::kill(locker, SIGKILL);
  ::waitpid(locker, nullptr, 0);
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  std::ifstream err_in(dir / "err.txt");
  std::string err((std::istreambuf_iterator<char>(err_in)), {});
  INFO(err);
  REQUIRE(ended);
  CHECK(took < 4);  // before: 5 s per write it tried, and it tried several
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(err.find("asked to stop, so it did not wait") != std::string::npos);  // why the records are incomplete
  // Its trials' processes are gone (the local backend's children die with the sweep).
  // ("[q]uick.flag": a pattern the pgrep line itself does not match.)
  auto ps = run_command({"/bin/sh", "-c", "pgrep -f '" + dir.string() + "/[q]uick.flag' | wc -l"});
  CHECK(ps.out == "0\n");
  // The database is consistent: readable, and `resume` picks the study up.
  auto st = run_dlsweep(db, {"status", "busy"}, dir);
  CHECK(st.exit_code == 0);
  auto check = run_dlsweep(db, {"query", "PRAGMA integrity_check", "--format", "csv"}, dir);
  CHECK(check.out.find("ok") != std::string::npos);
  std::ofstream(dir / "quick.flag") << "";
  auto resumed = run_dlsweep(db, {"resume", "busy", "--rerun", "cancelled"}, dir);
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir).out ==
        "state,COUNT(*)\nCOMPLETE,3\n");
}
