// bookkeeping.cpp — the orchestrator's bookkeeping against Optuna's, in one run: N trials
// x R reports and no compute. dlsweep runs `dlsweep submit` on a random-search study whose
// trial program (bench_bookkeeping_trial) only writes its R eval records, through the
// local backend (a process per trial, params.json and the WAITING row written before each
// launch, every record ingested into SQLite); Optuna runs the same trials in-process with
// ask/report/tell on RDBStorage over an SQLite file (bench/optuna_bookkeeping.py, Debian's
// python3-optuna). Both databases live in the same directory (same disk). Prints the
// trials per second of each and the ratio.
//
// Optuna's rate is steady per trial, so it runs fewer trials (--optuna-trials) to keep the
// bench short on a slow disk; the ratio compares rates.
//
// The machine's floor, in the same run: the same N trial programs started C at a time with
// nothing else (a directory and a params.json each, posix_spawn, waitpid) — what a process per
// trial costs on this machine before any bookkeeping. Its rate over Optuna's is the most
// the ratio can be here; how close dlsweep comes is its own cost. (Process start-up differs
// severalfold between machines: a VM that traps CPUID and page-table updates pays more. On
// ext4 without a journal it also varies within one machine: each new inode is checked against
// the cached inode-table block for a recent deletion, so after many files were created and
// deleted (earlier runs) every file costs more; `sync; echo 3 > /proc/sys/vm/drop_caches`
// before a run resets that — docs/benchmarks.md.)
//
// usage: bench_bookkeeping [--trials 200] [--optuna-trials 30] [--reports 20]
//                          [--concurrent 4] [--dir DIR] [--python /usr/bin/python3]
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#ifndef DLSWEEP_BIN
#define DLSWEEP_BIN "dlsweep"
#endif
#ifndef BOOKKEEPING_TRIAL_BIN
#define BOOKKEEPING_TRIAL_BIN "bench_bookkeeping_trial"
#endif
#ifndef OPTUNA_SCRIPT
#define OPTUNA_SCRIPT "optuna_bookkeeping.py"
#endif

namespace fs = std::filesystem;

namespace {

struct Run {
  int status = -1;
  double seconds = 0;
};

// Runs argv in `cwd` with stdout to `out_file` and stderr to `err_file`; times it.
Run run(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& out_file, const fs::path& err_file) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(127);
    if (!std::freopen(out_file.c_str(), "w", stdout) || !std::freopen(err_file.c_str(), "w", stderr)) ::_exit(127);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  Run r;
  if (pid < 0) return r;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

extern "C" char** environ;

/// The floor: `trials` runs of the trial program, `concurrent` at a time, each in a fresh
/// directory with a params.json, nothing recorded. Seconds, or a negative value on failure.
double process_floor(const fs::path& dir, int trials, int concurrent, int reports) {
  const std::string program = BOOKKEEPING_TRIAL_BIN, arg = std::to_string(reports);
  auto t0 = std::chrono::steady_clock::now();
  int running = 0, started = 0, failed = 0;
  auto reap_one = [&] {
    int st = 0;
    if (::wait(&st) > 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) ++failed;
    --running;
  };
  while (started < trials) {
    if (running == concurrent) reap_one();
    const fs::path d = dir / fmt::format("trial-{:04d}", started);
    fs::create_directories(d);
    std::ofstream(d / "params.json") << "{\"x\": 0.5, \"lr\": 0.01}\n";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, d.c_str());
    char* args[] = {const_cast<char*>(program.c_str()), const_cast<char*>(arg.c_str()), nullptr};
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, program.c_str(), &fa, nullptr, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    ++running;
    ++started;
  }
  while (running > 0) reap_one();
  if (failed) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 200, optuna_trials = 30, reports = 20, concurrent = 4;
  fs::path dir;
  std::string python = "/usr/bin/python3";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--trials") trials = std::atoi(v.c_str());
    else if (k == "--optuna-trials") optuna_trials = std::atoi(v.c_str());
    else if (k == "--reports") reports = std::atoi(v.c_str());
    else if (k == "--concurrent") concurrent = std::atoi(v.c_str());
    else if (k == "--dir") dir = v;
    else if (k == "--python") python = v;
    else {
      fmt::print(stderr, "unknown option {} (see the usage at the top of bench/bookkeeping.cpp)\n", k);
      return 2;
    }
  }
  if (trials <= 0 || optuna_trials <= 0 || reports <= 0 || concurrent <= 0) {
    fmt::print(stderr, "--trials, --optuna-trials, --reports and --concurrent must be positive\n");
    return 2;
  }
  const bool own_dir = dir.empty();
  if (own_dir) dir = fs::temp_directory_path() / fmt::format("dlsweep-bench-bookkeeping-{}", ::getpid());
  dir = fs::absolute(dir);
  fs::remove_all(dir);
  fs::create_directories(dir);

  // --- dlsweep
  std::ofstream(dir / "study.yaml") << fmt::format(R"(name: bookkeeping
backend: {{kind: local, max_concurrent: {}}}
trial:
  command: [{}, "{}"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: random, trials: {}, seed: 1}}
space:
  x: {{uniform: [0.0, 1.0]}}
  lr: {{log_uniform: [1.0e-4, 1.0]}}
runs_dir: {}
)",
                                                   concurrent, BOOKKEEPING_TRIAL_BIN, reports, trials,
                                                   (dir / "runs").string());
  Run ours = run({DLSWEEP_BIN, "--db", (dir / "dlsweep.db").string(), "submit", "study.yaml"}, dir,
                 dir / "dlsweep.out", dir / "dlsweep.err");
  if (ours.status != 0) {
    fmt::print(stderr, "dlsweep submit failed (exit {}):\n{}\n", ours.status, slurp(dir / "dlsweep.err"));
    return 1;
  }
  // Every trial complete with every report ingested, or the figure means nothing.
  Run check = run({DLSWEEP_BIN, "--db", (dir / "dlsweep.db").string(), "query",
                   "SELECT (SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE') || ' ' || (SELECT COUNT(*) FROM records)",
                   "--format", "csv"},
                  dir, dir / "check.out", dir / "check.err");
  const std::string expect = fmt::format("{} {}", trials, trials * reports);
  if (check.status != 0 || slurp(dir / "check.out").find(expect) == std::string::npos) {
    fmt::print(stderr, "dlsweep did not record {} complete trials and {} records: {}\n", trials, trials * reports,
               slurp(dir / "check.out") + slurp(dir / "check.err"));
    return 1;
  }
  const double ours_rate = trials / ours.seconds;

  // --- Optuna
  Run theirs = run({python, OPTUNA_SCRIPT, std::to_string(optuna_trials), std::to_string(reports),
                    (dir / "optuna.db").string()},
                   dir, dir / "optuna.out", dir / "optuna.err");
  if (theirs.status != 0) {
    fmt::print(stderr, "optuna run failed (exit {}): {}\n", theirs.status, slurp(dir / "optuna.err"));
    return 1;
  }
  // The script times itself (interpreter start-up and imports excluded).
  std::istringstream line(slurp(dir / "optuna.out"));
  std::string word;
  int n = 0;
  double secs = 0, theirs_rate = 0;
  line >> word >> n >> secs >> theirs_rate;
  if (word != "optuna" || theirs_rate <= 0) {
    fmt::print(stderr, "cannot read the optuna script's output: {}\n", slurp(dir / "optuna.out"));
    return 1;
  }

  // --- the machine's floor: the trial program alone, as many times, as many at a time.
  const double floor_s = process_floor(dir / "floor", trials, concurrent, reports);
  if (floor_s <= 0) {
    fmt::print(stderr, "the trial program failed to run alone ({})\n", BOOKKEEPING_TRIAL_BIN);
    return 1;
  }
  const double floor_rate = trials / floor_s;

  fmt::print("bookkeeping: N trials x {} reports, no compute\n", reports);
  fmt::print("  dlsweep (local backend, {} at a time, a process per trial): {:4} trials in {:7.2f} s = {:8.2f} trials/s\n",
             concurrent, trials, ours.seconds, ours_rate);
  fmt::print("  optuna  (in-process, RDBStorage on SQLite):                 {:4} trials in {:7.2f} s = {:8.2f} trials/s\n",
             n, secs, theirs_rate);
  fmt::print("  floor   (the trial program alone, {} at a time, no orchestrator): {:4} runs in {:7.2f} s = {:8.2f} runs/s\n",
             concurrent, trials, floor_s, floor_rate);
  const double ratio = ours_rate / theirs_rate;
  fmt::print("  ratio: {:.1f}x Optuna's trials/s (bar: >= 50x with both databases on disk): {}\n", ratio,
             ratio >= 50 ? "met" : "MISSED");
  fmt::print("  this machine's ceiling: {:.1f}x Optuna's trials/s (a process per trial and nothing else); dlsweep runs "
             "at {:.0f}% of the floor's rate (its own cost per trial: {:.2f} ms of wall time)\n",
             floor_rate / theirs_rate, 100 * ours_rate / floor_rate, 1e3 * (1 / ours_rate - 1 / floor_rate));
  fmt::print("  reproduce: bench_bookkeeping --trials {} --optuna-trials {} --reports {} --concurrent {}{}\n", trials,
             optuna_trials, reports, concurrent, own_dir ? "" : " --dir " + dir.string());
  if (own_dir) fs::remove_all(dir);
  else fmt::print("  (databases and runs kept in {})\n", dir.string());
  return 0;
}
