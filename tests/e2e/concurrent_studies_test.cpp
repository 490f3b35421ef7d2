// End-to-end: several studies at once in one database (issue 29, item 8), with the real
// dlsweep binary and small shell trials on the local backend. Three studies are submitted
// concurrently into one sweep.db, each driven by its own orchestrator under its own lock
// (db/orchestrator_lock: DB.locks/STUDY.lock, with DB.lock shared by every writer):
// `status`, `results` and `report` see all three while they run; a second submit, a resume
// and a delete of a running study are refused naming it and its orchestrator's pid; a kill -9
// of one orchestrator leaves the two others running to COMPLETE; `resume` of the killed one
// finishes it with every trial once (no trial lost, none run twice or recorded twice), and
// the database passes PRAGMA integrity_check.
//
// Nothing here waits for time to pass: each trial of number >= 1 waits for its study's gate
// file (made by the test once it has checked what it checks), and the test polls (bounded)
// for files and database states.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;

namespace {

// x = 1 (trial 0) finishes at once; any other waits for the gate file ($1), then reports.
// Each launch is counted in the trial's launches.txt.
const char* kTrial = R"(d="$DLSWEEP_TRIAL_DIR"
x=$(tr -d ' \n' < "$d/params.json" | sed 's/.*"x":\([0-9]*\).*/\1/')
echo launch >> "$d/launches.txt"
: > "$d/started"
if [ "$x" -gt 1 ]; then
  i=0
  while [ ! -e "$1" ] && [ $i -lt 12000 ]; do sleep 0.01; i=$((i+1)); done
fi
printf '{"seq": 0, "kind": "eval", "step": 1, "epoch": 1, "samples": 32, "wall_s": 0.1, "metrics": {"loss": %s}}\n' "$x" >> "$d/metrics.jsonl"
printf '{"seq": 1, "kind": "final", "step": 2, "epoch": 2, "samples": 64, "wall_s": 0.2, "metrics": {"loss": %s}}\n' "$x" >> "$d/metrics.jsonl"
)";

constexpr int kTrials = 4;
const std::vector<std::string> kStudies = {"cs-a", "cs-b", "cs-c"};

std::string study_yaml(const fs::path& dir, const std::string& name) {
  return fmt::format(R"(name: {0}
backend: {{kind: local, max_concurrent: 2}}
trial:
  command: [sh, "{1}", "{2}"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space:
  x: [1, 2, 3, 4]
runs_dir: {3}
)",
                     name, (dir / "trial.sh").string(), (dir / ("go-" + name)).string(), (dir / "runs").string());
}

// `status --format csv`: study -> its row's cells (state, trials, WAITING, ..., CANCELLED).
std::map<std::string, std::vector<std::string>> status_rows(const fs::path& db, const fs::path& dir,
                                                            std::string* err = nullptr) {
  auto r = run_dlsweep(db, {"status", "--format", "csv"}, dir);
  if (err) *err = r.err;
  std::map<std::string, std::vector<std::string>> rows;
  if (r.exit_code != 0) return rows;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (cells.size() == 10) rows[cells[0]] = {cells.begin() + 1, cells.end()};
  }
  return rows;
}

// Index of a column in status's row (after the study name).
constexpr std::size_t kState = 0, kTotal = 1, kComplete = 5;

std::string one_row(sqlite3* h, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return "prepare failed: " + sql;
  if (sqlite3_step(st) == SQLITE_ROW)
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      out += (i ? "," : "") + std::string(t ? reinterpret_cast<const char*>(t) : "NULL");
    }
  sqlite3_finalize(st);
  return out;
}

int launches(const fs::path& dir, const std::string& study, int n) {
  std::ifstream in(dir / "runs" / study / fmt::format("trial-{:04d}", n) / "launches.txt");
  int k = 0;
  for (std::string line; std::getline(in, line);) k += !line.empty();
  return k;
}

bool alive(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == 0; }


}  // namespace

TEST_CASE("three studies at once in one database; kill -9 of one leaves the others running; its resume loses nothing",
          "[concurrent_studies]") {
  auto dir = fresh_dir("concurrent-studies");
  const fs::path db = dir / "sweep.db";
  std::ofstream(dir / "trial.sh") << kTrial;
  for (const auto& s : kStudies) std::ofstream(dir / (s + ".yaml")) << study_yaml(dir, s);

  // 1. Three submits at once into one database.
  std::map<std::string, pid_t> pid;
  for (const auto& s : kStudies) {
    pid[s] = spawn_dlsweep(dir, db, {"submit", s + ".yaml"}, dir / (s + ".err"));
    REQUIRE(pid[s] > 0);
  }
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  // Each study has run trial 0 to its end and launched two more (trials 1 and 2, at the gate).
  for (const auto& s : kStudies) {
    INFO(s << ": " << slurp(dir / (s + ".err")));
    REQUIRE(wait_for(dir / "runs" / s / "trial-0001" / "started", std::chrono::seconds(120)));
    REQUIRE(wait_for(dir / "runs" / s / "trial-0002" / "started", std::chrono::seconds(120)));
  }
  for (const auto& s : kStudies) REQUIRE(alive(pid[s]));

  // 2. `status` mid-run lists all three RUNNING, each with trial 0 COMPLETE, and names none
  // as undriven; `serve` lists all three; `results` and `report` read each of them.
  std::string status_err;
  REQUIRE(test_support::wait_until(
      [&] {
        auto rows = status_rows(db, dir, &status_err);
        for (const auto& s : kStudies)
          if (!rows.contains(s) || rows[s][kState] != "RUNNING" || rows[s][kComplete] != "1") return false;
        return true;
      },
      std::chrono::seconds(120), std::chrono::milliseconds(100)));
  CHECK(status_err.find("no orchestrator is running") == std::string::npos);
  {
    auto served = serve_get(db, "/api/studies");
    INFO(served.err);
    REQUIRE(served.exit_code == 0);
    std::map<std::string, std::string> state;
    for (const auto& st : nlohmann::json::parse(served.out)) state[st.at("name")] = st.at("state");
    for (const auto& s : kStudies) CHECK(state[s] == "RUNNING");
  }
  for (const auto& s : kStudies) {
    auto r = run_dlsweep(db, {"results", s, "--format", "csv"}, dir);
    INFO(s << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("COMPLETE") != std::string::npos);
    auto rep = run_dlsweep(db, {"report", s, "-o", (dir / (s + ".html")).string()}, dir);
    INFO(rep.err);
    CHECK(rep.exit_code == 0);
    CHECK(slurp(dir / (s + ".html")).find(s) != std::string::npos);
  }
  // Each study's lock names its own orchestrator.
  for (const auto& s : kStudies)
    CHECK(slurp(db.string() + ".locks/" + s + ".lock").ends_with(" " + std::to_string(pid[s]) + "\n"));

  // 3. The same study again, a resume of it, and a delete of it are refused, naming the study
  // and its orchestrator's pid; nothing changes.
  const std::string held_b = fmt::format("driving study 'cs-b' of this database (pid {} on this host", pid["cs-b"]);
  {
    auto again = run_dlsweep(db, {"submit", "cs-b.yaml"}, dir);
    INFO(again.err);
    CHECK(again.exit_code == 1);
    CHECK(again.err.find(held_b) != std::string::npos);
    CHECK(again.err.find("nothing was recorded") != std::string::npos);
    auto replace = run_dlsweep(db, {"submit", "--replace", "cs-b.yaml"}, dir);
    INFO(replace.err);
    CHECK(replace.exit_code == 1);
    CHECK(replace.err.find(held_b) != std::string::npos);
    CHECK(replace.err.find("nothing was deleted") != std::string::npos);
    auto resume = run_dlsweep(db, {"resume", "cs-b"}, dir);
    INFO(resume.err);
    CHECK(resume.exit_code == 1);
    CHECK(resume.err.find(held_b) != std::string::npos);
    auto del = run_dlsweep(db, {"delete", "cs-b", "--yes"}, dir);
    INFO(del.err);
    CHECK(del.exit_code == 1);
    CHECK(del.err.find(held_b) != std::string::npos);
    CHECK(del.err.find("nothing was deleted") != std::string::npos);
  }

  // 4. kill -9 of cs-b's orchestrator in the middle (trial 0 done, 1 and 2 live, 3 not yet
  // created): the two others run on.
  REQUIRE(::kill(pid["cs-b"], SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid["cs-b"], &status, 0) == pid["cs-b"]);
  REQUIRE(WIFSIGNALED(status));
  CHECK(alive(pid["cs-a"]));
  CHECK(alive(pid["cs-c"]));
  // `status` names cs-b, and only cs-b, as driven by no orchestrator.
  {
    auto r = run_dlsweep(db, {"status"}, dir);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.find("nothing records the trials of cs-b now") != std::string::npos);
    CHECK(r.err.find("cs-a") == std::string::npos);
    CHECK(r.err.find("cs-c") == std::string::npos);
  }
  // The others' gates open: they finish, COMPLETE, exit 0.
  std::ofstream(dir / "go-cs-a") << "go\n";
  std::ofstream(dir / "go-cs-c") << "go\n";
  for (const std::string s : {"cs-a", "cs-c"}) {
    INFO(s << ": " << slurp(dir / (s + ".err")));
    REQUIRE(::waitpid(pid[s], &status, 0) == pid[s]);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  {
    auto rows = status_rows(db, dir);
    for (const std::string s : {"cs-a", "cs-c"}) {
      INFO(s);
      REQUIRE(rows.contains(s));
      CHECK(rows[s][kState] == "FINISHED");
      CHECK(rows[s][kTotal] == std::to_string(kTrials));
      CHECK(rows[s][kComplete] == std::to_string(kTrials));
    }
    REQUIRE(rows.contains("cs-b"));
    CHECK(rows["cs-b"][kState] == "RUNNING");  // recorded so by its dead orchestrator
  }

  // 5. resume of the killed study finishes it: its trials 1 and 2 (orphans at the gate, which
  // opens now) are stopped and run again or, if they finished meanwhile, recorded as they
  // ended; trial 3 runs; trial 0 is not run again.
  std::ofstream(dir / "go-cs-b") << "go\n";
  auto resumed = run_dlsweep(db, {"resume", "cs-b"}, dir);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  {
    auto rows = status_rows(db, dir);
    REQUIRE(rows.contains("cs-b"));
    CHECK(rows["cs-b"][kState] == "FINISHED");
    CHECK(rows["cs-b"][kTotal] == std::to_string(kTrials));
    CHECK(rows["cs-b"][kComplete] == std::to_string(kTrials));
  }
  CHECK(launches(dir, "cs-b", 0) == 1);
  CHECK(launches(dir, "cs-b", 3) == 1);
  for (int n = 1; n <= 2; ++n) CHECK(launches(dir, "cs-b", n) >= 1);
  for (const std::string s : {"cs-a", "cs-c"})
    for (int n = 0; n < kTrials; ++n) CHECK(launches(dir, s, n) == 1);

  // 6. The database: each study has trials 0..3 once, each COMPLETE with one final record
  // of its current attempt; no metric row twice; integrity_check ok.
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  for (const auto& s : kStudies) {
    INFO(s);
    CHECK(one_row(h, fmt::format("SELECT COUNT(*), COUNT(DISTINCT t.number), MIN(t.number), MAX(t.number), "
                                 "SUM(t.state = 'COMPLETE') FROM trials t JOIN studies s ON s.id = t.study_id "
                                 "WHERE s.name = '{}'",
                                 s)) == "4,4,0,3,4");
    CHECK(one_row(h, fmt::format("SELECT COUNT(*) FROM trials t JOIN studies s ON s.id = t.study_id "
                                 "WHERE s.name = '{}' AND (SELECT COUNT(*) FROM records r WHERE r.trial_id = t.id "
                                 "AND r.attempt = t.attempt AND r.kind = 'final') = 1",
                                 s)) == "4");
    CHECK(one_row(h, fmt::format("SELECT state FROM studies WHERE name = '{}'", s)) == "FINISHED");
  }
  CHECK(one_row(h, "SELECT COUNT(*) FROM (SELECT trial_id, attempt, kind, step, name, COUNT(*) AS c FROM metrics "
                   "GROUP BY trial_id, attempt, kind, step, name HAVING c > 1)") == "0");
  CHECK(one_row(h, "PRAGMA integrity_check") == "ok");
  sqlite3_close(h);
  // Every orchestrator has ended: no lock is held, and `status` says nothing is undriven.
  auto after = run_dlsweep(db, {"status"}, dir);
  CHECK(after.exit_code == 0);
  CHECK(after.err.find("no orchestrator is running") == std::string::npos);
}
