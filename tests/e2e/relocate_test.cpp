// End-to-end: projects that move and projects that are copied, with the real dlsweep and
// a protocol-speaking Python trial on the local backend (relocation.hpp).
//  - A move mid-sweep: kill -9 of `submit` with trials running and pending, `mv projA
//    projB`, `resume` in projB: followed (one line says so), every trial COMPLETE, the
//    trial program of projB, and nothing written outside projB (projA is not made again).
//  - A copy: `cp -r projG projH`; `resume --add-trials 1` in projH is refused (nothing
//    changes in either); with `--relocate projG=projH` it runs in projH only; `submit
//    --replace` in another copy removes that copy's files only; projG's own `--add-trials 1`
//    runs in projG only. Each database's trial 2 has one run's records.
//  - Read verbs work on the moved and the copied study before any resume; `enqueue` and
//    `cancel` in a copy are refused like `resume`.
//  - A move across filesystems (a tmpfs directory and the temp directory), when there are two.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Writes which program ran it (its own path) and `started` in its trial directory; trials
// with gate=1 wait, before their evaluations, for the file `go` in the project (found from
// DLSWEEP_TRIAL_DIR: a process of a dead orchestrator in a moved project never sees it).
const char* kTrial = R"(import json, os, sys, time
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
with open(os.path.join(d, "ran_by.txt"), "a") as f:
    f.write(os.path.abspath(__file__) + "\n")
open(os.path.join(d, "started"), "w").close()
if p.get("gate") == 1:
    go = os.path.join(d, "..", "..", "..", "go")
    deadline = time.time() + 120  # bounds a hang only
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.02)
out = open(os.path.join(d, "metrics.jsonl"), "a")
x = float(p["x"])
for i in range(3):
    out.write(json.dumps({"seq": i, "kind": "eval", "step": 10 * (i + 1), "epoch": i + 1, "samples": 320 * (i + 1),
                          "wall_s": 0.1 * (i + 1), "metrics": {"val_acc": x + 0.01 * i}}) + "\n")
    out.flush()
out.write(json.dumps({"seq": 3, "kind": "final", "step": 40, "epoch": 4, "samples": 1280, "wall_s": 0.4,
                      "metrics": {"val_acc": x + 0.05}}) + "\n")
out.flush()
sys.exit(0)
)";

fs::path make_project(const fs::path& dir, const std::string& name, const std::string& search,
                      const std::string& space, int concurrent) {
  fs::create_directories(dir);
  std::ofstream(dir / "trial.py") << kTrial;
  std::ofstream(dir / "study.yaml") << "name: " << name << "\nbackend: {kind: local, max_concurrent: " << concurrent
                                    << R"(}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: val_acc, mode: max}
)" << "search: " << search << "\nspace:\n"
                                    << space << "runs_dir: runs\n";
  return dir;
}

json results(const fs::path& cwd, const std::string& study) {
  auto r = run_dlsweep("dlsweep.db", {"results", study, "--format", "json"}, cwd);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out);
}

std::string query(const fs::path& cwd, const std::string& sql) {
  auto r = run_dlsweep("dlsweep.db", {"query", sql, "--format", "csv"}, cwd);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto nl = r.out.find('\n');
  std::string rows = nl == std::string::npos ? "" : r.out.substr(nl + 1);
  while (!rows.empty() && (rows.back() == '\n' || rows.back() == '\r')) rows.pop_back();
  return rows;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int lines(const fs::path& p) {
  std::ifstream in(p);
  int n = 0;
  for (std::string l; std::getline(in, l);) n += !l.empty();
  return n;
}

// Every path under `root` (files and directories), relative.
std::vector<std::string> tree(const fs::path& root) {
  std::vector<std::string> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

// The read verbs a user tries first, each answering from the database alone.
void read_verbs_work(const fs::path& cwd, const std::string& study) {
  for (std::vector<std::string> args : {std::vector<std::string>{"status", study}, {"results", study},
                                        {"best", study, "--by", "value"}, {"export", study},
                                        {"report", study, "-o", "-"}}) {
    auto r = run_dlsweep("dlsweep.db", args, cwd);
    INFO(args[0] << ": " << r.err);
    // best: 3 is its answer while no trial has completed ("nothing to recommend").
    CHECK((r.exit_code == 0 || (args[0] == "best" && r.exit_code == 3)));
    CHECK_THAT(r.err, !Catch::Contains("error:"));
  }
}

// Every trial_dir the database holds lies under `root`.
void trial_dirs_under(const fs::path& cwd, const fs::path& root) {
  std::istringstream dirs(query(cwd, "SELECT trial_dir FROM trials"));
  int n = 0;
  for (std::string d; std::getline(dirs, d);) {
    if (d.empty()) continue;
    ++n;
    INFO(d);
    CHECK(d.starts_with(root.string() + "/"));
  }
  CHECK(n > 0);
}

// Moves a directory as mv does: a rename, or across filesystems a copy and a removal.
void move_dir(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (!ec) return;
  REQUIRE(ec == std::errc::cross_device_link);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(from);
}

}  // namespace

TEST_CASE("e2e relocate: a project moved mid-sweep is followed and finishes in its new place", "[relocate]") {
  const fs::path dir = fresh_dir("relocate-move");
  const fs::path a = dir / "projA", b = dir / "projB";
  // Four trials, two at a time, each waiting for `go`: two run, two wait, when submit dies.
  make_project(a, "reloc", "{algorithm: grid}", "  x: [0.6, 0.7, 0.8, 0.9]\n  gate: [1]\n", 2);
  const int pid = spawn_dlsweep(a, "dlsweep.db", {"submit", "study.yaml"}, dir / "submit.err");
  REQUIRE(pid > 0);
  REQUIRE(wait_for(a / "runs/reloc/trial-0000/started"));
  REQUIRE(wait_for(a / "runs/reloc/trial-0001/started"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);

  move_dir(a, b);
  read_verbs_work(b, "reloc");  // before any resume: the database alone answers
  std::ofstream(b / "go").close();
  auto r = run_dlsweep("dlsweep.db", {"resume", "reloc"}, b);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains(fmt::format("study 'reloc' moved: {} -> {} (its database was {}/dlsweep.db)",
                                                a.string(), b.string(), a.string())));
  // The orphans of the dead orchestrator (waiting in projA's names) were stopped.
  CHECK_THAT(r.err, Catch::Contains("2 orphaned processes stopped"));
  auto j = results(b, "reloc");
  REQUIRE(j.size() == 4);
  for (const auto& t : j) CHECK(t["state"] == "COMPLETE");
  CHECK_FALSE(fs::exists(a));  // nothing written where the project was
  for (int n = 0; n < 4; ++n) {
    const fs::path t = b / fmt::format("runs/reloc/trial-{:04d}", n);
    INFO(t);
    // Every run of every trial was projB's program (trials 0 and 1 twice: their orphans ran it
    // from projA's path before the move, and the relaunch after it).
    std::istringstream ran(slurp(t / "ran_by.txt"));
    std::string last;
    for (std::string l; std::getline(ran, l);) last = l;
    CHECK(last == (b / "trial.py").string());
  }
  trial_dirs_under(b, b);
  CHECK(query(b, "SELECT count(*) FROM events WHERE kind = 'relocate'") == "1");
  // The marker names the database that owns the directory now.
  CHECK_THAT(slurp(b / "runs/reloc/.dlsweep-study.json"), Catch::Contains((b / "dlsweep.db").string()));
  // A second resume finds it at home: nothing moves again.
  auto again = run_dlsweep("dlsweep.db", {"resume", "reloc"}, b);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.err, !Catch::Contains("moved"));
}

TEST_CASE("e2e relocate: a copied project never writes into the original's files", "[relocate]") {
  const fs::path dir = fresh_dir("relocate-copy");
  const fs::path g = dir / "projG", h = dir / "projH";
  make_project(g, "copyme", "{algorithm: random, trials: 2, seed: 3}", "  x: {uniform: [0.5, 0.9]}\n", 1);
  auto sub = run_dlsweep("dlsweep.db", {"submit", "study.yaml"}, g);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  fs::copy(g, h, fs::copy_options::recursive);
  const fs::path k = dir / "projK";  // a second copy, started afresh with submit --replace
  fs::copy(g, k, fs::copy_options::recursive);
  const auto g_before = tree(g);
  read_verbs_work(h, "copyme");

  // The copy: refused, with both ways on, and nothing changed in either project.
  auto refused = run_dlsweep("dlsweep.db", {"resume", "copyme", "--add-trials", "1"}, h);
  INFO(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err, Catch::Contains("this database is a copy") &&
                              Catch::Contains(fmt::format("--relocate {}={}", g.string(), h.string())) &&
                              Catch::Contains("submit --replace") && Catch::Contains("nothing was changed"));
  // Nor do the verbs that hand the study's orchestrator a file: it would be the original's.
  auto enq = run_dlsweep("dlsweep.db", {"enqueue", "copyme", "--set", "x=0.7"}, h);
  CHECK(enq.exit_code == 2);
  CHECK_THAT(enq.err, Catch::Contains("this database is a copy") && Catch::Contains("nothing was enqueued"));
  auto can = run_dlsweep("dlsweep.db", {"cancel", "copyme"}, h);
  CHECK(can.exit_code == 2);
  CHECK_THAT(can.err, Catch::Contains("this database is a copy") && Catch::Contains("nothing was cancelled"));
  CHECK(tree(g) == g_before);
  CHECK(results(h, "copyme").size() == 2);
  CHECK(query(h, "SELECT count(*) FROM events WHERE kind = 'add_trials'") == "0");

  // --relocate makes the copy its own: its third trial runs in projH, with projH's program.
  auto moved = run_dlsweep("dlsweep.db", {"resume", "copyme", "--add-trials", "1", "--relocate",
                                          g.string() + "=" + h.string()},
                           h);
  INFO(moved.err);
  REQUIRE(moved.exit_code == 0);
  CHECK_THAT(moved.err, Catch::Contains(fmt::format("study 'copyme' relocated (--relocate): {} -> {}", g.string(),
                                                    h.string())));
  CHECK(tree(g) == g_before);  // the original untouched
  CHECK(results(h, "copyme").size() == 3);
  CHECK(slurp(h / "runs/copyme/trial-0002/ran_by.txt") == (h / "trial.py").string() + "\n");
  trial_dirs_under(h, h);

  // The other way on: `submit --replace` in the copy deletes the copy's own study and files,
  // never the original's, and starts afresh there.
  auto replaced = run_dlsweep("dlsweep.db", {"submit", "--replace", "study.yaml"}, k);
  INFO(replaced.err);
  REQUIRE(replaced.exit_code == 0);
  CHECK_THAT(replaced.err, Catch::Contains(fmt::format("removed {}", (k / "runs/copyme").string())));
  CHECK(tree(g) == g_before);
  CHECK(results(k, "copyme").size() == 2);
  CHECK(slurp(k / "runs/copyme/trial-0000/ran_by.txt") == (k / "trial.py").string() + "\n");
  trial_dirs_under(k, k);

  // The original goes on in its own place, as if no copy existed.
  auto own = run_dlsweep("dlsweep.db", {"resume", "copyme", "--add-trials", "1"}, g);
  INFO(own.err);
  REQUIRE(own.exit_code == 0);
  CHECK_THAT(own.err, !Catch::Contains("moved") && !Catch::Contains("relocated"));
  CHECK(results(g, "copyme").size() == 3);
  CHECK(slurp(g / "runs/copyme/trial-0002/ran_by.txt") == (g / "trial.py").string() + "\n");
  trial_dirs_under(g, g);
  // Each trial 2 ran once, in its own tree: one run's records in each database and file.
  for (const auto& p : {g, h}) {
    INFO(p);
    CHECK(lines(p / "runs/copyme/trial-0002/metrics.jsonl") == 4);
    CHECK(query(p, "SELECT count(*) FROM records r JOIN trials t ON t.id = r.trial_id WHERE t.number = 2") == "4");
  }
}

TEST_CASE("e2e relocate: a project moved across filesystems is followed", "[relocate]") {
  const fs::path other = "/dev/shm";
  struct stat shm{}, tmp{};
  const fs::path dir = fresh_dir("relocate-xfs");
  if (::stat(other.c_str(), &shm) != 0 || ::stat(dir.c_str(), &tmp) != 0 || shm.st_dev == tmp.st_dev ||
      ::access(other.c_str(), W_OK) != 0) {
    WARN("SKIPPED: no second filesystem to move across (" << other << " is missing, read-only or the same as "
                                                          << dir << ")");
    return;
  }
  const fs::path src = other / fmt::format("dlsweep-relocate-{}", ::getpid()) / "proj";
  fs::remove_all(src.parent_path());
  const fs::path dst = dir / "proj";
  make_project(src, "xfs", "{algorithm: random, trials: 2, seed: 5}", "  x: {uniform: [0.5, 0.9]}\n", 1);
  auto sub = run_dlsweep("dlsweep.db", {"submit", "study.yaml"}, src);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  move_dir(src, dst);
  auto r = run_dlsweep("dlsweep.db", {"resume", "xfs", "--add-trials", "1"}, dst);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains(fmt::format("study 'xfs' moved: {} -> {}", src.string(), dst.string())));
  auto j = results(dst, "xfs");
  REQUIRE(j.size() == 3);
  for (const auto& t : j) CHECK(t["state"] == "COMPLETE");
  CHECK_FALSE(fs::exists(src));
  trial_dirs_under(dst, dst);
  fs::remove_all(src.parent_path());
}
