// db_placement_test.cpp — `--db` on a filesystem other hosts share (README "Where the
// database lives"): a real FUSE mount (bindfs; statfs type FUSE, so dlsweep picks snapshot
// mode by itself), and the same with DLSWEEP_DB_MODE=snapshot on a local directory. A sweep
// runs with --db there; `status`, `results` and `query` read it while it runs and always
// succeed with consistent data; a second orchestrator is told who holds the lock (host and
// pid); kill -9 of the orchestrator, then `resume` completes with nothing lost. Where FUSE
// cannot be mounted (no bindfs, no /dev/fuse, no CAP_SYS_ADMIN) that variant is skipped,
// visibly, with the reason; the forced-snapshot one always runs.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "db/storage.hpp"
#include "run_command.hpp"
#include "fuse_mount.hpp"
#include "tests/support/scoped_env.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kTrials = 24, kReports = 6;
const std::string kStudy = "e2e-place";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int started_trials(const fs::path& runs) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(runs, ec), end; !ec && it != end; it.increment(ec))
    if (fs::exists(it->path() / "metrics.jsonl")) ++n;
  return n;
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, ',');) out.push_back(f);
  return out;
}

void check_no_lock_trouble(const CommandResult& r) {
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("locked") == std::string::npos);
  CHECK(r.err.find("malformed") == std::string::npos);
}

// Every trial dir whose program wrote a record has a row, with its params, in the published file.
void check_write_ahead(const fs::path& runs, const fs::path& db) {
  auto storage = dlsweep::db::Storage::open_readonly(db);
  REQUIRE(storage.has_value());
  auto study = (*storage)->find_study(kStudy);
  REQUIRE(study.has_value());
  REQUIRE(study->has_value());
  auto trials = (*storage)->list_trials((*study)->id);
  REQUIRE(trials.has_value());
  std::map<std::string, nlohmann::json> params_by_dir;
  for (const auto& t : *trials) params_by_dir[fs::path(t.trial_dir).filename().string()] = t.params;
  for (const auto& e : fs::directory_iterator(runs)) {
    if (!fs::exists(e.path() / "metrics.jsonl")) continue;
    INFO(e.path().string());
    auto row = params_by_dir.find(e.path().filename().string());
    REQUIRE(row != params_by_dir.end());
    std::ifstream in(e.path() / "params.json");
    CHECK(nlohmann::json::parse(in, nullptr, false) == row->second);
  }
}

void write_study(const fs::path& file) {
  std::ofstream(file) << R"(
name: e2e-place
backend: {kind: local, max_concurrent: 3}
trial:
  command:
    - /bin/sh
    - -c
    - |
      n=$(cat metrics.jsonl 2>/dev/null | wc -l)
      while [ "$n" -lt )" << kReports << R"( ]; do
        echo "{\"seq\":$n,\"kind\":\"eval\",\"step\":$((n+1)),\"metrics\":{\"loss\":$n}}" >> metrics.jsonl
        n=$((n+1))
        sleep 0.2
      done
objective: {metric: loss, mode: min}
search: {algorithm: random, trials: )" << kTrials << R"(, seed: 5}
space:
  x: {uniform: [0.0, 1.0]}
)";
}

// The whole scenario with the database (and the runs) in `shared`, the live copy under `local`.
void sweep_readers_kill_resume(const fs::path& shared, const fs::path& local, bool expect_fuse_note) {
  test_support::ScopedEnv live("DLSWEEP_DB_LIVE_DIR", local.string());
  write_study(shared / "study.yaml");
  const fs::path db = shared / "sweep.db", runs = shared / "dlsweep-runs" / kStudy;
  const fs::path err = local / "submit.err";
  pid_t pid = spawn_dlsweep(shared, db, {"submit", "study.yaml"}, err);
  REQUIRE(pid > 0);
  bool exited = false;  // an orchestrator that died early: REQUIRE says so at once
  REQUIRE(test_support::wait_until(
      [&] {
        exited = exited || ::waitpid(pid, nullptr, WNOHANG) == pid;
        return exited || started_trials(runs) >= 1;
      },
      std::chrono::minutes(2)));
  REQUIRE(started_trials(runs) >= 1);

  // Readers while the sweep runs: each succeeds, and each sees one consistent state.
  std::int64_t last_trials = 0;
  int reads = 0;
  bool alive = true;
  while (alive && (reads < 4 || started_trials(runs) < kTrials / 2)) {
    auto status = run_dlsweep(db, {"status", kStudy}, shared);
    check_no_lock_trouble(status);
    auto results = run_dlsweep(db, {"results", kStudy, "--format", "csv"}, shared);
    check_no_lock_trouble(results);
    auto q = run_dlsweep(db,
                         {"query",
                          "SELECT (SELECT COUNT(*) FROM trials), "
                          "(SELECT COUNT(*) FROM trials t WHERE NOT EXISTS (SELECT 1 FROM params p WHERE p.trial_id = t.id)), "
                          "(SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM records GROUP BY trial_id, attempt)), "
                          "(SELECT COUNT(*) FROM records r WHERE NOT EXISTS (SELECT 1 FROM trials t WHERE t.id = r.trial_id))",
                          "--format", "csv"},
                         shared);
    check_no_lock_trouble(q);
    auto nl = q.out.find('\n');
    REQUIRE(nl != std::string::npos);
    auto f = csv_fields(q.out.substr(nl + 1, q.out.find('\n', nl + 1) - nl - 1));
    REQUIRE(f.size() == 4);
    const std::int64_t trials = std::stoll(f[0]);
    CHECK(trials >= last_trials);  // snapshots only move forward
    CHECK(trials <= kTrials);
    CHECK(f[1] == "0");                                 // a trial and its params: one transaction
    CHECK(std::stoll(f[2]) <= kReports);                // no report twice
    CHECK(f[3] == "0");                                 // no record without its trial
    last_trials = trials;
    ++reads;
    alive = ::waitpid(pid, nullptr, WNOHANG) != pid;
    if (reads == 1 && alive) {
      // The lock names its holder; a second orchestrator is told who.
      auto holder = slurp(db.string() + ".lock");
      CHECK(holder.find(" " + std::to_string(pid)) != std::string::npos);
      auto second = run_dlsweep(db, {"resume", kStudy}, shared);
      INFO(second.err);
      CHECK(second.exit_code != 0);
      CHECK(second.err.find("another dlsweep orchestrator is driving study '" + std::string(kStudy) +
                            "' of this database (pid " + std::to_string(pid)) != std::string::npos);
      // Published as a whole file: nothing of WAL beside it on the shared filesystem.
      CHECK_FALSE(fs::exists(db.string() + "-wal"));
      CHECK_FALSE(fs::exists(db.string() + "-shm"));
    }
  }
  CHECK(reads >= 2);
  const auto note = slurp(err);
  INFO(note);
  CHECK(note.find("publishes " + db.string()) != std::string::npos);
  if (expect_fuse_note) CHECK(note.find("on fuse") != std::string::npos);

  // kill -9: the node's live copy is lost with it (as if the node died); the shared file
  // holds every trial that was launched (write-ahead), and resume finishes the study.
  if (alive) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    WARN("orchestrator killed with " << started_trials(runs) << " of " << kTrials << " trials started");
  }
  check_write_ahead(runs, db);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(local)) fs::remove_all(e.path(), ec);  // the dead node's disk
  auto r = run_dlsweep(db, {"resume", kStudy}, shared);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  check_write_ahead(runs, db);
  auto done = run_dlsweep(db,
                          {"query",
                           "SELECT COUNT(*), SUM(state = 'COMPLETE'), "
                           "(SELECT state FROM studies), "
                           "(SELECT MIN(n) || '-' || MAX(n) FROM (SELECT COUNT(*) AS n FROM records GROUP BY trial_id))"
                           " FROM trials",
                           "--format", "csv"},
                          shared);
  check_no_lock_trouble(done);
  CHECK(done.out.substr(done.out.find('\n') + 1) == std::to_string(kTrials) + "," + std::to_string(kTrials) +
                                                        ",FINISHED," + std::to_string(kReports) + "-" +
                                                        std::to_string(kReports) + "\n");
  // Closed cleanly: the live copy is gone from the node's disk, the shared file is whole.
  std::size_t left = 0;
  for (fs::recursive_directory_iterator it(local, ec), end; !ec && it != end; it.increment(ec))
    left += it->is_regular_file() && it->path().string().ends_with(".db");
  CHECK(left == 0);
  auto check = run_command({"sqlite3", "-readonly", db.string(), "PRAGMA integrity_check"});
  if (check.exit_code == 0) CHECK(check.out == "ok\n");
}

}  // namespace

TEST_CASE("--db on a FUSE filesystem (bindfs): readers during the sweep, kill -9, resume", "[db_placement]") {
  auto dir = fresh_dir("db-fuse");
  fs::create_directories(dir / "src");
  fs::create_directories(dir / "local");
  test_support::ScopedEnv mode("DLSWEEP_DB_MODE", std::nullopt);  // the filesystem decides
  FuseMount mount(dir / "src", dir / "mnt");
  if (!mount.mounted || !mount.why_not.empty()) {
    WARN("SKIPPED: --db on FUSE: " << mount.why_not << " (the forced-snapshot case below runs the same scenario)");
    return;
  }
  sweep_readers_kill_resume(dir / "mnt", dir / "local", /*expect_fuse_note=*/true);
}

TEST_CASE("--db with DLSWEEP_DB_MODE=snapshot on a local dir: readers during the sweep, kill -9, resume",
          "[db_placement]") {
  auto dir = fresh_dir("db-forced-snapshot");
  fs::create_directories(dir / "shared");
  fs::create_directories(dir / "local");
  test_support::ScopedEnv mode("DLSWEEP_DB_MODE", std::string("snapshot"));
  sweep_readers_kill_resume(dir / "shared", dir / "local", /*expect_fuse_note=*/false);
}
