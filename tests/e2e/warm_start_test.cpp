// End-to-end, `search.warm_start`: the real dlsweep runs a small random study of a
// protocol-speaking Python trial (Branin), then a TPE study warm-started from it in another
// database. The earlier trials are copied into the new database marked WARM, never run (no
// trial directory, no budget), `best` never names one, `status` and the report say how many;
// the TPE proposals differ from a cold run's; resume works with the earlier database gone;
// missing, damaged and wrong sources are refused before anything is recorded, all at once.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kTrial = R"(import json, math, os
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
x, y = float(p["x"]), float(p["y"])
v = (y - 5.1 / (4 * math.pi ** 2) * x * x + 5 / math.pi * x - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "final", "step": 1, "epoch": 1, "samples": 1, "wall_s": 0.1,
                          "metrics": {"loss": v}}) + "\n")
)";

std::string study(const std::string& name, const std::string& search) {
  return "name: " + name + R"(
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: loss, mode: min}
search: )" + search + R"(
space:
  x: {uniform: [-5, 10]}
  y: {uniform: [0, 15]}
)";
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

json results(const fs::path& db, const std::string& name, const fs::path& dir) {
  auto r = run_dlsweep(db, {"results", name, "--format", "json"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("e2e warm start: earlier trials seed TPE, are stored marked WARM and are never run") {
  const auto dir = fresh_dir("warm_start");
  write(dir / "trial.py", kTrial);
  fs::create_directories(dir / "earlier");
  write(dir / "earlier" / "early.yaml", study("early", "{algorithm: random, trials: 12, seed: 1}"));
  write(dir / "later.yaml",
        study("later", "{algorithm: tpe, trials: 4, seed: 2, startup_trials: 5, "
                       "warm_start: [{study: early, db: earlier/early.db}]}"));
  write(dir / "cold.yaml", study("cold", "{algorithm: tpe, trials: 4, seed: 2, startup_trials: 5}"));
  // trial.py is found through {study_dir}: the earlier study's file lives beside it too.
  write(dir / "earlier" / "trial.py", kTrial);

  auto a = run_dlsweep(dir / "earlier" / "early.db", {"submit", "earlier/early.yaml"}, dir);
  INFO(a.out << a.err);
  REQUIRE(a.exit_code == 0);

  auto b = run_dlsweep(dir / "later.db", {"submit", "later.yaml"}, dir);
  INFO(b.out << b.err);
  REQUIRE(b.exit_code == 0);
  CHECK(b.err.find("warm start: 12 COMPLETE trials of study 'early'") != std::string::npos);

  // 4 trials run, 12 warm-start rows marked WARM with numbers before 0.
  const auto rows = results(dir / "later.db", "later", dir);
  REQUIRE(rows.size() == 16);
  int warm = 0;
  for (const auto& r : rows) {
    if (r["state"] != "WARM") {
      CHECK(r["trial"].get<int>() >= 0);
      continue;
    }
    ++warm;
    CHECK(r["trial"].get<int>() < 0);
    CHECK(r["value"].is_number());
    CHECK(r["params"].contains("x"));
    CHECK(r["message"].get<std::string>().find("warm start (not run): trial") != std::string::npos);
  }
  CHECK(warm == 12);
  // The earlier trials' values are those the earlier study recorded.
  const auto early = results(dir / "earlier" / "early.db", "early", dir);
  std::set<double> early_values, warm_values;
  for (const auto& r : early) early_values.insert(r["value"].get<double>());
  for (const auto& r : rows)
    if (r["state"] == "WARM") warm_values.insert(r["value"].get<double>());
  CHECK(early_values == warm_values);

  // Never run: only this study's 4 trial directories exist.
  int dirs = 0;
  for (const auto& e : fs::directory_iterator(dir / "dlsweep-runs" / "later")) dirs += e.path().filename().string().starts_with("trial-");
  CHECK(dirs == 4);

  // `best` names one of this study's own trials; status and the report say how many seeded it.
  auto best = run_dlsweep(dir / "later.db", {"best", "later", "--format", "json"}, dir);
  INFO(best.out << best.err);
  REQUIRE(best.exit_code == 0);
  CHECK(json::parse(best.out)["trial"].get<int>() >= 0);
  auto status = run_dlsweep(dir / "later.db", {"status", "later"}, dir);
  CHECK(status.out.find("warm start: 12 trials of earlier studies") != std::string::npos);
  auto page = run_dlsweep(dir / "later.db", {"report", "later", "-o", "-"}, dir);
  REQUIRE(page.exit_code == 0);
  CHECK(page.out.find(R"("warm_start":{"studies":["early"],"trials":12})") != std::string::npos);

  // A cold TPE study with the same seed proposes other trials: the warm start is used.
  auto c = run_dlsweep(dir / "cold.db", {"submit", "cold.yaml"}, dir);
  INFO(c.out << c.err);
  REQUIRE(c.exit_code == 0);
  const auto cold = results(dir / "cold.db", "cold", dir);
  REQUIRE(cold.size() == 4);
  json warm_params = json::array(), cold_params = json::array();
  for (const auto& r : rows)
    if (r["state"] != "WARM") warm_params.push_back(r["params"]);
  for (const auto& r : cold) cold_params.push_back(r["params"]);
  CHECK(warm_params != cold_params);
  CHECK(warm_params[0] != cold_params[0]);  // TPE is past its startup trials from the first

  // Resume reads the stored copies: the earlier database may be gone.
  fs::rename(dir / "earlier" / "early.db", dir / "earlier" / "moved.db");
  auto r = run_dlsweep(dir / "later.db", {"resume", "later", "--add-trials", "2"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("warm start: 12 trials of earlier studies seed the sampler") != std::string::npos);
  const auto after = results(dir / "later.db", "later", dir);
  CHECK(after.size() == 18);
}

TEST_CASE("e2e warm start: bad sources are refused before anything is recorded, every one at once") {
  const auto dir = fresh_dir("warm_start_bad");
  write(dir / "trial.py", kTrial);
  write(dir / "early.yaml", study("early", "{algorithm: random, trials: 3, seed: 1}"));
  auto a = run_dlsweep(dir / "early.db", {"submit", "early.yaml"}, dir);
  INFO(a.out << a.err);
  REQUIRE(a.exit_code == 0);
  write(dir / "damaged.db", "this is not a database at all, just text that is long enough to be read\n");
  // A study of another objective direction in the same database as the new study.
  write(dir / "maxed.yaml", "name: maxed\nbackend: {kind: local}\ntrial: {command: [python3, \"{study_dir}/trial.py\"]}\n"
                            "objective: {metric: loss, mode: max}\nsearch: {algorithm: random, trials: 2}\n"
                            "space: {x: {uniform: [-5, 10]}, y: {uniform: [0, 15]}}\n");
  auto m = run_dlsweep(dir / "new.db", {"submit", "maxed.yaml"}, dir);
  INFO(m.out << m.err);
  REQUIRE(m.exit_code == 0);
  // Each error names the study file, the line and the key of the entry it comes from.
  write(dir / "later.yaml", study("later", "\n"                                     // line 6
                                           "  algorithm: tpe\n"                    // 7
                                           "  trials: 2\n"                         // 8
                                           "  warm_start:\n"                       // 9
                                           "    - {study: early, db: missing.db}\n"  // 10
                                           "    - study: nope\n"                   // 11
                                           "      db: early.db\n"                  // 12
                                           "    - {study: early, db: damaged.db}\n"  // 13
                                           "    - {study: maxed, db: new.db}\n"      // 14
                                           "    - {study: early, db: early.db}"));    // 15
  auto b = run_dlsweep(dir / "new.db", {"submit", "later.yaml"}, dir);
  INFO(b.out << b.err);
  CHECK(b.exit_code == 2);
  CHECK(b.err.find("error: later.yaml:10: search.warm_start[0].db: the database") != std::string::npos);
  CHECK(b.err.find("missing.db does not exist") != std::string::npos);
  CHECK(b.err.find("error: later.yaml:11: search.warm_start[1].study: the database") != std::string::npos);
  CHECK(b.err.find("holds no study named 'nope' (it holds: early)") != std::string::npos);
  CHECK(b.err.find("error: later.yaml:13: search.warm_start[2].db: cannot read the database") != std::string::npos);
  // The fix speaks of the entry's db, not of --db or of creating a new file.
  CHECK(b.err.find("point db at the dlsweep database the earlier study was submitted with") != std::string::npos);
  CHECK(b.err.find("or at a new file name") == std::string::npos);
  CHECK(b.err.find("error: later.yaml:14: search.warm_start[3]: study 'maxed'") != std::string::npos);
  CHECK(b.err.find("it optimises loss (max), this study loss (min)") != std::string::npos);
  CHECK(b.err.find("search.warm_start[4]") == std::string::npos);  // the good one
  CHECK(b.err.find("4 errors in later.yaml; nothing was recorded.") != std::string::npos);
  // A JSON study file has no lines: file and key.
  write(dir / "later.json", R"({"name": "later", "trial": {"command": ["python3", "{study_dir}/trial.py"]},
    "objective": {"metric": "loss", "mode": "min"},
    "search": {"algorithm": "tpe", "trials": 2, "warm_start": [{"study": "early", "db": "missing.db"},
                                                         {"study": "early", "db": "~/early.db"}]},
    "space": {"x": {"uniform": [-5, 10]}, "y": {"uniform": [0, 15]}}})");
  auto j = run_dlsweep(dir / "new.db", {"submit", "later.json"}, dir);
  INFO(j.out << j.err);
  CHECK(j.exit_code == 2);
  CHECK(j.err.find("error: later.json: search.warm_start[0].db: the database") != std::string::npos);
  CHECK(j.err.find("error: later.json: search.warm_start[1].db: the database") != std::string::npos);
  CHECK(j.err.find("`~` is not expanded here") != std::string::npos);  // the shell's ~ means nothing in a study file
  auto st = run_dlsweep(dir / "new.db", {"status", "later"}, dir);
  CHECK(st.exit_code == 2);  // no such study: nothing was recorded

  // A source in this study's own database works (read before the lock, read-only) ...
  write(dir / "early2.yaml", study("early2", "{algorithm: random, trials: 3, seed: 1}"));
  auto e2 = run_dlsweep(dir / "new.db", {"submit", "early2.yaml"}, dir);
  INFO(e2.out << e2.err);
  REQUIRE(e2.exit_code == 0);
  write(dir / "own.yaml", study("own", "{algorithm: tpe, trials: 2, warm_start: [{study: early2, db: new.db}]}"));
  auto own = run_dlsweep(dir / "new.db", {"submit", "own.yaml"}, dir);
  INFO(own.out << own.err);
  REQUIRE(own.exit_code == 0);
  int warm = 0;
  for (const auto& row : results(dir / "new.db", "own", dir)) warm += row["state"] == "WARM";
  CHECK(warm == 3);
  // ... but a study never warm-starts from itself, and `--replace` deletes nothing then.
  write(dir / "own.yaml", study("own", "{algorithm: tpe, trials: 2, warm_start: [{study: own, db: new.db}]}"));
  auto self = run_dlsweep(dir / "new.db", {"submit", "--replace", "own.yaml"}, dir);
  INFO(self.out << self.err);
  CHECK(self.exit_code == 2);
  CHECK(self.err.find("own.yaml:6: search.warm_start[0].study: a study cannot warm-start from itself") != std::string::npos);
  CHECK(self.err.find("nothing was recorded or deleted") != std::string::npos);
  CHECK(results(dir / "new.db", "own", dir).size() == 5);  // still there
  // The dry run refuses it too (it used to draw its trials from the study's own history).
  auto dry = run_dlsweep(dir / "new.db", {"submit", "--dry-run", "own.yaml"}, dir);
  INFO(dry.out << dry.err);
  CHECK(dry.exit_code == 2);
  CHECK(dry.err.find("own.yaml:6: search.warm_start[0].study: a study cannot warm-start from itself") != std::string::npos);
  CHECK(dry.err.find("1 error in own.yaml; nothing was submitted or run.") != std::string::npos);
  // On its first submit too, when the database does not hold it yet (it used to say the
  // database holds no study of that name).
  write(dir / "fresh.yaml", study("fresh", "{algorithm: tpe, trials: 2, warm_start: [{study: fresh, db: new.db}]}"));
  auto fresh = run_dlsweep(dir / "new.db", {"submit", "fresh.yaml"}, dir);
  INFO(fresh.out << fresh.err);
  CHECK(fresh.exit_code == 2);
  CHECK(fresh.err.find("fresh.yaml:6: search.warm_start[0].study: a study cannot warm-start from itself") !=
        std::string::npos);
  CHECK(fresh.err.find("holds no study named") == std::string::npos);
  // ... and when its database does not exist yet (the very first submit creates it).
  write(dir / "fresh2.yaml",
        study("fresh2", "{algorithm: tpe, trials: 2, warm_start: [{study: fresh2, db: brand-new.db}]}"));
  REQUIRE_FALSE(fs::exists(dir / "brand-new.db"));
  auto brand_new = run_dlsweep(dir / "brand-new.db", {"submit", "fresh2.yaml"}, dir);
  INFO(brand_new.out << brand_new.err);
  CHECK(brand_new.exit_code == 2);
  CHECK(brand_new.err.find("fresh2.yaml:6: search.warm_start[0].study: a study cannot warm-start from itself") !=
        std::string::npos);
  CHECK(brand_new.err.find("does not exist") == std::string::npos);

  // random ignores the history: refused by the validator.
  write(dir / "rnd.yaml", study("rnd", "{algorithm: random, trials: 2, warm_start: [{study: early, db: early.db}]}"));
  auto r = run_dlsweep(dir / "new.db", {"submit", "rnd.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("search.warm_start: random search ignores earlier trials") != std::string::npos);
}

namespace {

int finished_trials(const fs::path& runs) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(runs, ec), end; !ec && it != end; it.increment(ec))
    if (fs::exists(it->path() / "metrics.jsonl")) ++n;
  return n;
}

// Starts `dlsweep --db DB args` in `dir`, waits until `threshold` trials have written their
// record (or it exits), then kills it with SIGKILL. False when it had already finished.
bool kill_midway(const fs::path& dir, const fs::path& db, const std::vector<std::string>& args, int threshold) {
  pid_t pid = spawn_dlsweep(dir, db, args);
  REQUIRE(pid >= 0);
  bool exited = false;
  test_support::wait_until(
      [&] {
        if (finished_trials(dir / "dlsweep-runs" / "later") >= threshold) return true;
        exited = ::waitpid(pid, nullptr, WNOHANG) == pid;
        return exited;
      },
      std::chrono::minutes(5), std::chrono::milliseconds(2));
  if (exited) return false;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return true;
}

json own_params(const fs::path& db, const fs::path& dir) {
  json out = json::array();
  for (const auto& r : results(db, "later", dir))
    if (r["state"] != "WARM") out.push_back(r["params"]);
  return out;
}

}  // namespace

TEST_CASE("e2e warm start: kill -9 and resume draw the params an uninterrupted warm-started run draws") {
  const auto dir = fresh_dir("warm_start_replay");
  write(dir / "trial.py", kTrial);
  write(dir / "early.yaml", study("early", "{algorithm: random, trials: 10, seed: 5}"));
  auto a = run_dlsweep(dir / "early.db", {"submit", "early.yaml"}, dir);
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  const std::string later = study("later", "{algorithm: tpe, trials: 10, seed: 11, startup_trials: 4, "
                                           "warm_start: [{study: early, db: ../early.db}]}");
  const std::string one_at_a_time = "backend: {kind: local, max_concurrent: 1}";
  auto serial = [&](std::string y) { return y.replace(y.find("backend: {kind: local, max_concurrent: 2}"), 41, one_at_a_time); };
  const auto straight = dir / "straight", killed = dir / "killed";
  fs::create_directories(straight);
  fs::create_directories(killed);
  for (const auto& d : {straight, killed}) {
    write(d / "later.yaml", serial(later));
    write(d / "trial.py", kTrial);
  }
  auto s = run_dlsweep(straight / "sweep.db", {"submit", "later.yaml"}, straight);
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  int kills = 0;
  if (kill_midway(killed, killed / "sweep.db", {"submit", "later.yaml"}, 3)) ++kills;
  // The earlier database is gone before the resumes: the stored copies are what they read.
  fs::rename(dir / "early.db", dir / "early-moved.db");
  if (kill_midway(killed, killed / "sweep.db", {"resume", "later"}, 6)) ++kills;
  CHECK(kills >= 1);
  auto b = run_dlsweep(killed / "sweep.db", {"resume", "later"}, killed);
  INFO(b.err);
  REQUIRE(b.exit_code == 0);
  const auto want = own_params(straight / "sweep.db", straight), got = own_params(killed / "sweep.db", killed);
  REQUIRE(want.size() == 10);
  CHECK(got == want);
}
