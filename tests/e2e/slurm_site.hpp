// slurm_site.hpp — what the end-to-end tests on the local Slurm cluster use to play a site's
// rules: PATH with a wrapper directory first, scripts written executable, a `sbatch` that
// refuses like Slurm past a per-user job limit, and a log file's lines.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "../support/wait_until.hpp"
#include "run_command.hpp"

namespace slurm_site {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// PATH with `dir` first, for this process and the dlsweep it starts; restored on exit.
struct PathFirst {
  std::string old = std::getenv("PATH") ? std::getenv("PATH") : "";
  explicit PathFirst(const fs::path& dir) { ::setenv("PATH", (dir.string() + ":" + old).c_str(), 1); }
  ~PathFirst() { ::setenv("PATH", old.c_str(), 1); }
};

inline void write_script(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

// MaxSubmitJobsPerUser=4 as a wrapper: counts the user's pending and running jobs (each array
// task one) plus the tasks of the script's --array, refuses like Slurm past 4, logs each
// accepted total to accepted.log and each refusal to refused.log. `sbatch --test-only`
// (dlsweep's preflight) passes through.
inline std::string limit_wrapper(const fs::path& log_dir, int limit) {
  return fmt::format(R"SH(#!/bin/bash
for a in "$@"; do [ "$a" = --test-only ] && exec /usr/bin/sbatch "$@"; script="$a"; done
n=1
spec=$(sed -n 's/^#SBATCH --array=\([0-9]*\)-\([0-9]*\).*/\1 \2/p' "$script" | head -n 1)
if [ -n "$spec" ]; then set -- "$@"; lo=${{spec% *}}; hi=${{spec#* }}; n=$((hi - lo + 1)); fi
live=$(/usr/bin/squeue -h -r -t PENDING,RUNNING,CONFIGURING,COMPLETING | wc -l)
if [ $((live + n)) -gt {limit} ]; then
  echo "sbatch: error: QOSMaxSubmitJobPerUserLimit" >&2
  echo "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)" >&2
  echo "$live $n" >> '{log}/refused.log'
  exit 1
fi
echo $((live + n)) >> '{log}/accepted.log'
exec /usr/bin/sbatch "$@"
)SH",
                     fmt::arg("limit", limit), fmt::arg("log", log_dir.string()));
}

inline std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

/// Starts `dlsweep --db DB submit study.yaml` in `dir` (stderr to err.txt) and returns its pid.
inline pid_t start_submit(const fs::path& dir, const fs::path& db) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen((dir / "err.txt").c_str(), "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "study.yaml", (char*)nullptr);
    ::_exit(127);
  }
  return pid;
}

/// SIGTERM to `pid`; its exit status and the seconds it took to exit (bounded at 120 s).
inline std::pair<int, double> terminate(pid_t pid) {
  const auto t0 = Clock::now();
  ::kill(pid, SIGTERM);
  int status = 0;
  // The 120 s bound is for a hang only; the measured time is what the test checks.
  if (!test_support::wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(120),
                                std::chrono::milliseconds(20))) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return {-1, 120};
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
          std::chrono::duration<double>(Clock::now() - t0).count()};
}

inline std::string states(const fs::path& db, const fs::path& dir) {
  return run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state ORDER BY state", "--format", "csv"},
                     dir)
      .out;
}

}  // namespace slurm_site
