// delete_test.cpp — studies you can correct: `dlsweep delete STUDY [--files] [--yes]` and
// `dlsweep submit --replace`, with the real binary, real trial processes and a real SQLite
// file. A study recorded with a wrong script path is replaced; a deleted study leaves no
// row in any table and can be submitted again; every refusal (an orchestrator holding the
// database, live trials, no confirmation, an invalid new study file, a directory that is
// not provably the study's) deletes nothing.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "db/storage.hpp"
#include "run_command.hpp"

namespace fs = std::filesystem;

namespace {

using Counts = std::map<std::string, long long>;

const char* const kTables[] = {"studies", "trials", "params", "records", "metrics", "jobs", "events", "enqueued_trials"};

void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A two-trial study whose trial runs `script` (in the study file's directory) with sh: a
// grid, or random (which `dlsweep enqueue` can steer).
std::string study(const std::string& name, const std::string& script, bool random = false) {
  return "name: " + name + "\n"
         "backend: {kind: local, max_concurrent: 2}\n"
         "trial: {command: [/bin/sh, \"{study_dir}/" + script + "\"], max_retries: 0}\n"
         "objective: {metric: loss, mode: min}\n" +
         (random ? "search: {algorithm: random, trials: 2}\nspace: {x: {int: [1, 4]}}\n"
                 : "search: {algorithm: grid}\nspace: {x: [1, 2]}\n");
}

// A trial script: announces itself (file `started` in the trial dir), sleeps, reports.
std::string script(double sleep_s) {
  return "touch started\nsleep " + std::to_string(sleep_s) +
         "\necho '{\"seq\":0,\"kind\":\"final\",\"step\":1,\"metrics\":{\"loss\":1}}' >> metrics.jsonl\n";
}

long long scalar(const fs::path& db, const std::string& sql) {
  auto s = dlsweep::db::Storage::open_readonly(db);
  REQUIRE(s.has_value());
  auto r = (*s)->query(sql);
  INFO(sql << ": " << (r ? "" : r.error().message()));
  REQUIRE(r.has_value());
  REQUIRE(r->rows.size() == 1);
  return r->rows[0][0].get<long long>();
}

// Rows in every table of the database.
Counts totals(const fs::path& db) {
  Counts c;
  for (const char* t : kTables) c[t] = scalar(db, std::string("SELECT count(*) FROM ") + t);
  return c;
}

// Rows of study `name` in every table.
Counts rows_of(const fs::path& db, const std::string& name) {
  const std::string id = "(SELECT id FROM studies WHERE name = '" + name + "')";
  const std::string trials = "(SELECT id FROM trials WHERE study_id = " + id + ")";
  Counts c;
  c["studies"] = scalar(db, "SELECT count(*) FROM studies WHERE id = " + id);
  c["trials"] = scalar(db, "SELECT count(*) FROM trials WHERE study_id = " + id);
  for (const char* t : {"params", "records", "metrics", "jobs"})
    c[t] = scalar(db, std::string("SELECT count(*) FROM ") + t + " WHERE trial_id IN " + trials);
  c["events"] = scalar(db, "SELECT count(*) FROM events WHERE study_id = " + id);
  c["enqueued_trials"] = scalar(db, "SELECT count(*) FROM enqueued_trials WHERE study_id = " + id);
  return c;
}

Counts minus(Counts a, const Counts& b) {
  for (const auto& [t, n] : b) a[t] -= n;
  return a;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("submit --replace fixes a study recorded with a wrong script path", "[delete]") {
  auto dir = fresh_dir("delete-wrong-path");
  auto db = dir / "sweep.db";
  write(dir / "train.sh", script(0));
  write(dir / "study.yaml", study("d-path", "trian.sh"));  // the typo
  REQUIRE(run_dlsweep(db, {"submit", "study.yaml"}, dir).exit_code == 3);  // every trial failed
  const fs::path root = dir / "dlsweep-runs" / "d-path";
  write(root / "trial-0000" / "stale-output", "from the wrong study\n");

  write(dir / "study.yaml", study("d-path", "train.sh"));  // fixed
  auto plain = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(plain.exit_code == 2);
  CHECK(contains(plain.err, "--replace"));  // the refusal names the way out

  auto r = run_dlsweep(db, {"submit", "--replace", "study.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.err, "replaced study 'd-path'"));
  CHECK(contains(r.err, "2 trials"));
  CHECK(scalar(db, "SELECT count(*) FROM studies") == 1);
  CHECK(scalar(db, "SELECT count(*) FROM trials") == 2);
  CHECK(scalar(db, "SELECT count(*) FROM trials WHERE state = 'COMPLETE'") == 2);
  CHECK(scalar(db, "SELECT count(*) FROM studies WHERE spec_json LIKE '%trian.sh%'") == 0);
  CHECK_FALSE(fs::exists(root / "trial-0000" / "stale-output"));  // the old directory went with it
  // Logged: an event of the new study, and a line beside the study directories.
  CHECK(scalar(db, "SELECT count(*) FROM events WHERE kind = 'replace' AND reason LIKE '%deleted 1 study, 2 trials%'") == 1);
  const std::string log = slurp(dir / "dlsweep-runs" / "dlsweep-deletions.log");
  CHECK(contains(log, "dlsweep submit --replace: deleted study 'd-path'"));
  CHECK(contains(log, "removed " + root.string()));
}

TEST_CASE("delete --files --yes removes every row and the directory of one study; it can be submitted again",
          "[delete]") {
  auto dir = fresh_dir("delete-files");
  auto db = dir / "sweep.db";
  write(dir / "train.sh", script(0));
  write(dir / "gone.yaml", study("d-gone", "train.sh", /*random=*/true));
  write(dir / "kept.yaml", study("d-kept", "train.sh"));
  REQUIRE(run_dlsweep(db, {"submit", "kept.yaml"}, dir).exit_code == 0);
  REQUIRE(run_dlsweep(db, {"submit", "gone.yaml"}, dir).exit_code == 0);
  REQUIRE(run_dlsweep(db, {"enqueue", "d-gone", "--set", "x=1"}, dir).exit_code == 0);
  const Counts before = totals(db), gone = rows_of(db, "d-gone"), kept = rows_of(db, "d-kept");
  REQUIRE(gone.at("metrics") > 0);
  REQUIRE(gone.at("enqueued_trials") == 1);

  auto r = run_dlsweep(db, {"delete", "d-gone", "--files", "--yes"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.err, "deleted study 'd-gone'"));
  CHECK(contains(r.err, "2 trials"));
  CHECK(totals(db) == minus(before, gone));  // no row of it left in any table ...
  CHECK(rows_of(db, "d-kept") == kept);      // ... and the other study untouched
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "d-gone"));
  CHECK(fs::exists(dir / "dlsweep-runs" / "d-kept" / "trial-0000"));
  CHECK(contains(slurp(dir / "dlsweep-runs" / "dlsweep-deletions.log"), "dlsweep delete --files: deleted study 'd-gone'"));

  auto again = run_dlsweep(db, {"submit", "gone.yaml"}, dir);
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(scalar(db, "SELECT count(*) FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.name = 'd-gone'") == 2);

  // Without --files the rows go and the directory stays.
  auto rows_only = run_dlsweep(db, {"delete", "d-kept", "--yes"}, dir);
  CHECK(rows_only.exit_code == 0);
  CHECK(scalar(db, "SELECT count(*) FROM studies WHERE name = 'd-kept'") == 0);
  CHECK(fs::exists(dir / "dlsweep-runs" / "d-kept" / "trial-0000"));
}

TEST_CASE("delete refuses the study an orchestrator drives, and deletes nothing; another study goes", "[delete]") {
  auto dir = fresh_dir("delete-locked");
  auto db = dir / "sweep.db";
  write(dir / "fast.sh", script(0));
  write(dir / "slow.sh", script(6));
  write(dir / "done.yaml", study("d-done", "fast.sh"));
  write(dir / "busy.yaml", study("d-busy", "slow.sh"));
  REQUIRE(run_dlsweep(db, {"submit", "done.yaml"}, dir).exit_code == 0);
  pid_t pid = spawn_dlsweep(dir, db, {"submit", "busy.yaml"});
  REQUIRE(pid >= 0);
  REQUIRE(wait_for(dir / "dlsweep-runs" / "d-busy" / "trial-0000" / "started"));
  const Counts before = totals(db);
  // The study it drives: refused, naming the study and the orchestrator's pid.
  {
    auto r = run_dlsweep(db, {"delete", "d-busy", "--files", "--yes"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "driving study 'd-busy' of this database (pid " + std::to_string(pid)));
    CHECK(contains(r.err, "nothing was deleted"));
  }
  CHECK(totals(db) == before);
  // Another study of the same database: each study has its own lock, so it goes while
  // d-busy's orchestrator runs on.
  {
    auto r = run_dlsweep(db, {"delete", "d-done", "--files", "--yes"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
  CHECK(scalar(db, "SELECT count(*) FROM studies WHERE name = 'd-done'") == 0);
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "d-done"));
  CHECK(scalar(db, "SELECT count(*) FROM studies WHERE name = 'd-busy'") == 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Once it has finished, the same command goes through.
  CHECK(run_dlsweep(db, {"delete", "d-busy", "--files", "--yes"}, dir).exit_code == 0);
}

TEST_CASE("delete refuses a study with live trials until they are cancelled", "[delete]") {
  auto dir = fresh_dir("delete-live");
  auto db = dir / "sweep.db";
  write(dir / "slow.sh", script(60));
  write(dir / "study.yaml", study("d-live", "slow.sh"));
  pid_t pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"});
  REQUIRE(pid >= 0);
  REQUIRE(wait_for(dir / "dlsweep-runs" / "d-live" / "trial-0000" / "started"));
  ::kill(pid, SIGKILL);  // the orchestrator dies; its trial processes run on
  ::waitpid(pid, nullptr, 0);
  const Counts before = totals(db);
  auto r = run_dlsweep(db, {"delete", "d-live", "--files", "--yes"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "QUEUED or RUNNING"));
  CHECK(contains(r.err, "dlsweep cancel d-live"));
  CHECK(totals(db) == before);
  CHECK(fs::exists(dir / "dlsweep-runs" / "d-live" / "trial-0000"));
  REQUIRE(run_dlsweep(db, {"cancel", "d-live"}, dir).exit_code == 0);
  auto after = run_dlsweep(db, {"delete", "d-live", "--files", "--yes"}, dir);
  INFO(after.err);
  CHECK(after.exit_code == 0);
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "d-live"));
}

TEST_CASE("delete without --yes and without a terminal refuses and deletes nothing", "[delete]") {
  auto dir = fresh_dir("delete-unconfirmed");
  auto db = dir / "sweep.db";
  write(dir / "train.sh", script(0));
  write(dir / "study.yaml", study("d-ask", "train.sh"));
  REQUIRE(run_dlsweep(db, {"submit", "study.yaml"}, dir).exit_code == 0);
  const Counts before = totals(db);
  auto r = run_dlsweep(db, {"delete", "d-ask", "--files"}, dir);  // stdin is /dev/null
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--yes"));
  CHECK(contains(r.err, "nothing was deleted"));
  CHECK(contains(r.err, "to delete: 1 study, 2 trials"));  // it said what it would have deleted
  CHECK(totals(db) == before);
  CHECK(fs::exists(dir / "dlsweep-runs" / "d-ask" / "trial-0001"));
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "dlsweep-deletions.log"));

  // An unknown name is a usage error with a suggestion.
  auto typo = run_dlsweep(db, {"delete", "d-asc", "--yes"}, dir);
  CHECK(typo.exit_code == 2);
  CHECK(contains(typo.err, "no study named 'd-asc'"));
  CHECK(contains(typo.err, "did you mean 'd-ask'?"));
  CHECK(totals(db) == before);
}

TEST_CASE("submit --replace with an invalid study file deletes nothing", "[delete]") {
  auto dir = fresh_dir("delete-replace-invalid");
  auto db = dir / "sweep.db";
  write(dir / "train.sh", script(0));
  write(dir / "study.yaml", study("d-keep", "train.sh"));
  REQUIRE(run_dlsweep(db, {"submit", "study.yaml"}, dir).exit_code == 0);
  const Counts before = totals(db);
  std::string bad = study("d-keep", "train.sh");
  bad.replace(bad.find("mode: min"), 9, "mode: minimise");
  write(dir / "bad.yaml", bad);
  auto r = run_dlsweep(db, {"submit", "--replace", "bad.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "objective.mode"));
  CHECK(contains(r.err, "nothing was recorded or deleted"));
  CHECK(totals(db) == before);
  CHECK(fs::exists(dir / "dlsweep-runs" / "d-keep" / "trial-0000"));
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "dlsweep-deletions.log"));
}

TEST_CASE("delete --files leaves a directory it cannot prove is the study's, and deletes nothing", "[delete]") {
  auto dir = fresh_dir("delete-foreign");
  auto db = dir / "sweep.db";
  write(dir / "train.sh", script(0));
  write(dir / "study.yaml", study("d-mine", "train.sh"));
  REQUIRE(run_dlsweep(db, {"submit", "study.yaml"}, dir).exit_code == 0);
  const fs::path root = dir / "dlsweep-runs" / "d-mine";
  const Counts before = totals(db);

  SECTION("no marker and a file dlsweep did not make") {
    fs::remove(root / ".dlsweep-study.json");
    write(root / "my-notes.txt", "keep me\n");
    auto r = run_dlsweep(db, {"delete", "d-mine", "--files", "--yes"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "my-notes.txt"));
    CHECK(totals(db) == before);
    CHECK(fs::exists(root / "my-notes.txt"));
    // With the stray file gone, what is left is all dlsweep's own: it may go.
    fs::remove(root / "my-notes.txt");
    CHECK(run_dlsweep(db, {"delete", "d-mine", "--files", "--yes"}, dir).exit_code == 0);
    CHECK_FALSE(fs::exists(root));
  }
  SECTION("a marker of another study") {
    write(root / ".dlsweep-study.json", R"({"study": "d-mine", "created_at": 1.0, "database": "/elsewhere.db"})");
    auto r = run_dlsweep(db, {"delete", "d-mine", "--files", "--yes"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "/elsewhere.db"));
    CHECK(totals(db) == before);
    CHECK(fs::exists(root / "trial-0000"));
  }
}
