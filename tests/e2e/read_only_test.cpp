// Reading is safe for anyone (db/storage_open.cpp): a collaborator with read permission only,
// and a read-only mount of the study, read a real sweep's database with every read verb,
// during the sweep and after it, without write access to anything. Before, every read verb
// failed after the sweep ("attempt to write a readonly database": the WAL file's -shm could
// not be created). Runs as root (useradd, runuser, unshare + mount); elsewhere it says so.
// The same on the FUSE filesystem the placement tests use (bindfs: dlsweep picks snapshot
// mode there by itself), and a read-only FUSE view (`bindfs -r`) of the finished study.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "fuse_mount.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;

namespace {

constexpr const char* kUser = "dlsweep-ro-reader";

struct Reader {
  bool created = false;
  Reader() {
    if (run_command({"id", "-u", kUser}).exit_code != 0) {
      auto r = run_command({"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", kUser});
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      created = true;
    }
  }
  ~Reader() {
    if (created) run_command({"userdel", kUser});
  }
  CommandResult dlsweep(const fs::path& db, std::vector<std::string> args) const {
    std::vector<std::string> argv = {"runuser", "-u", kUser, "--", DLSWEEP_BIN, "--db", db.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, "/");
  }
  // `dlsweep serve` run as the reader, one GET of `path` from it.
  CommandResult serve_and_get(const fs::path& db, const std::string& path) const {
    return serve_get(db, path, {"runuser", "-u", kUser, "--"});
  }
};

void readable_by_all(const fs::path& dir) {
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
}

// A study of two trials in `dir`; each reports, then waits for `go` beside the study before it ends.
void write_study(const fs::path& dir, const std::string& name) {
  readable_by_all(dir);
  std::ofstream(dir / "trial.py") << R"(import json, os, sys, time
d = os.environ["DLSWEEP_TRIAL_DIR"]
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "eval", "step": 1, "epoch": 1, "samples": 64, "wall_s": 1.0,
                          "metrics": {"val_acc": 0.5}}) + "\n")
    out.flush()
    go = os.path.join(sys.argv[1], "go")
    for _ in range(600):
        if os.path.exists(go):
            break
        time.sleep(0.1)
    out.write(json.dumps({"seq": 1, "kind": "final", "step": 2, "epoch": 2, "samples": 128, "wall_s": 2.0,
                          "metrics": {"val_acc": 0.6}}) + "\n")
)";
  std::ofstream(dir / "study.yaml") << "name: " << name << R"(
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py", "{study_dir}"]
objective: {metric: val_acc, mode: max}
search: {algorithm: grid}
space:
  x: [1, 2]
)";
}

void every_read_verb(const Reader& reader, const fs::path& db, const std::string& study, bool finished) {
  for (std::vector<std::string> verb : {std::vector<std::string>{"status", study}, {"results", study},
                                       {"results", study, "--format", "json"}, {"export", study},
                                       {"query", "SELECT count(*) FROM trials"}, {"plan", study, "--ranks", "1,2"}}) {
    auto r = reader.dlsweep(db, verb);
    INFO(verb[0] << ": " << r.out << r.err);
    CHECK(r.err.find("readonly") == std::string::npos);
    if (verb[0] != "plan") CHECK(r.exit_code == 0);  // plan may find nothing to fit in a toy study
  }
  {  // serve, as the reader: it starts, and its API answers with the study
    auto r = reader.serve_and_get(db, "/api/studies/" + study);
    INFO("serve: " << r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\"" + study + "\"") != std::string::npos);
    CHECK(r.out.find("readonly") == std::string::npos);
  }
  if (finished) {
    for (std::vector<std::string> verb : {std::vector<std::string>{"best", study}, {"best", study, "--explain"}}) {
      auto r = reader.dlsweep(db, verb);
      INFO(verb[0] << ": " << r.out << r.err);
      CHECK(r.exit_code == 0);
    }
    const auto out = fs::temp_directory_path() / ("dlsweep-ro-report-" + std::to_string(::getpid()));
    fs::create_directories(out);
    ::chown(out.c_str(), 0, 0);
    fs::permissions(out, fs::perms::all);
    auto r = reader.dlsweep(db, {"report", study, "-o", (out / "r").string()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    fs::remove_all(out);
  }
}

enum class Where { local_wal, local_snapshot, fuse };

// The study in `dir`. local_snapshot: the orchestrator in snapshot mode (DLSWEEP_DB_MODE=snapshot,
// as on a filesystem other hosts share: the published file is in DELETE mode, readers open it
// immutable); fuse: `dir` is a bindfs mount, where dlsweep chooses snapshot mode by itself.
void scenario(const Reader& reader, const fs::path& dir, Where where) {
  write_study(dir, "ro-sweep");
  const bool snapshot = where != Where::local_wal;
  const auto db = dir / "sweep.db";
  if (where == Where::local_snapshot) ::setenv("DLSWEEP_DB_MODE", "snapshot", 1);
  else ::unsetenv("DLSWEEP_DB_MODE");
  const int pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"}, dir / "orchestrator.err");
  ::unsetenv("DLSWEEP_DB_MODE");
  REQUIRE(pid > 0);
  // During: both trials have reported and wait; the orchestrator holds the database.
  REQUIRE(wait_for(dir / "dlsweep-runs" / "ro-sweep" / "trial-0001" / "metrics.jsonl"));
  every_read_verb(reader, db, "ro-sweep", false);
  if (!snapshot) {  // what a reader lacks is named
    // -wal/-shm the reader may not read: the message says so and what to ask for.
    ::chmod((db.string() + "-shm").c_str(), 0600);
    ::chmod((db.string() + "-wal").c_str(), 0600);
    auto r = reader.dlsweep(db, {"status", "ro-sweep"});
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("-shm") != std::string::npos);
    ::chmod((db.string() + "-shm").c_str(), 0644);
    ::chmod((db.string() + "-wal").c_str(), 0644);
  }
  std::ofstream(dir / "go") << "\n";
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  // After: the orchestrator's last connection removed the -wal/-shm, the reader cannot create them.
  every_read_verb(reader, db, "ro-sweep", true);
  if (where == Where::fuse) {
    // A read-only FUSE view of the finished study (an archive served by FUSE): every read verb,
    // for the collaborator and for root, who cannot write there either.
    FuseMount view(dir, dir.parent_path() / "ro-view", {"-r"});
    REQUIRE(view.mounted);
    every_read_verb(reader, view.mnt / "sweep.db", "ro-sweep", true);
    auto r = run_dlsweep(view.mnt / "sweep.db", {"best", "ro-sweep"}, "/");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(!fs::exists(view.mnt / "sweep.db-wal"));
    return;
  }
  // A read-only mount of the study (an archive, a snapshot): root, who could write anywhere
  // else, cannot write there either.
  const auto mnt = fs::temp_directory_path() / ("dlsweep-ro-mnt-" + std::to_string(::getpid()));
  fs::create_directories(mnt);
  auto r = run_command({"unshare", "-m", "sh", "-c",
                        "mount --bind -o ro \"$0\" \"$1\" && \"$2\" --db \"$1/sweep.db\" results ro-sweep --format json && "
                        "\"$2\" --db \"$1/sweep.db\" best ro-sweep",
                        dir.string(), mnt.string(), DLSWEEP_BIN});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("\"COMPLETE\"") != std::string::npos);
  fs::remove(mnt);
}

}  // namespace

TEST_CASE("e2e read-only: another user and a read-only mount read a sweep with every read verb, during and after it") {
  if (::geteuid() != 0) {
    WARN("needs root (useradd, runuser, mount): not run");
    return;
  }
  Reader reader;
  scenario(reader, fresh_dir("ro-sweep"), Where::local_wal);
}

TEST_CASE("e2e read-only: the same with the database in snapshot mode (a filesystem other hosts share)") {
  if (::geteuid() != 0) {
    WARN("needs root (useradd, runuser, mount): not run");
    return;
  }
  Reader reader;
  scenario(reader, fresh_dir("ro-sweep"), Where::local_snapshot);
}

TEST_CASE("e2e read-only: the same with the study on a FUSE filesystem (bindfs), and a read-only FUSE view of it") {
  if (::geteuid() != 0) {
    WARN("needs root (useradd, runuser, mount): not run");
    return;
  }
  const auto top = fresh_dir("ro-fuse");
  readable_by_all(top);
  fs::create_directories(top / "src");
  FuseMount mount(top / "src", top / "mnt");
  if (!mount.mounted || !mount.why_not.empty()) {
    WARN("SKIPPED: the study on FUSE: " << mount.why_not);
    return;
  }
  Reader reader;
  scenario(reader, mount.mnt, Where::fuse);
}
