// The controller's own refusals on the real local Slurm cluster (issue 38): slurmctld started
// by scripts/slurm-local.sh with MaxJobCount=6 (each array task counts one; finished jobs too
// until MinJobAge). The real sbatch, past MaxJobCount, does not fail: it prints "Slurm
// temporarily unable to accept job, sleeping and retrying" and retries for two minutes.
// Before the fix dlsweep killed it at 60 s as "the controller may be overloaded or down" and
// resubmitted the same array of 20, which never fits: nothing ran. Now a 20-trial sweep
// finishes, every trial run exactly once, and the limit is named in the progress. The second
// case adds MaxArraySize=4 (arrays split below it, read from the controller) to MaxJobCount.
// The third case: a per-user submit limit from Slurm's accounting database (MaxSubmitJobs=4,
// scripts/slurm-local.sh --max-submit-jobs: MariaDB and slurmdbd started with the cluster),
// refused by slurmctld itself (AssocMaxSubmitJobLimit). The wrapper-played site limits
// (QOSMaxSubmitJobPerUserLimit) are in slurm_limits_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"
#include "slurm_site.hpp"

using namespace slurm_test;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace slurm_site;

namespace {

struct Sweep {
  CommandResult r;
  double took = 0;
  std::vector<std::string> runs;  ///< one line (the trial directory) per run of a trial
  std::string states, site_limits;
};

// `n` trials of a fast shell trial (1 s) on a cluster started with `limits`, all at once
// (max_concurrent n). Bounded: on today's main the sweep never ends (the array is never
// accepted), so dlsweep runs under `timeout 180`.
Sweep run_sweep(const std::vector<std::string>& limits, int n, const std::string& name) {
  Sweep out;
  LocalCluster cluster(1, 1001, limits);
  REQUIRE(cluster.up);
  auto dir = fresh_dir(name);
  const auto runs_log = dir / "runs.log";
  std::string space;
  for (int i = 1; i <= n; ++i) space += (space.empty() ? "" : ", ") + std::to_string(i);
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: {}
backend: {{kind: slurm, max_concurrent: {}, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sh, -c, "pwd >> '{}'; sleep 1; echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [{}]}}
)", name, n, cluster.conf, runs_log.string(), space);
  auto db = dir / "sweep.db";
  const auto t0 = Clock::now();
  out.r = run_command({"timeout", "-k", "20", "180", DLSWEEP_BIN, "--db", db.string(), "submit", "study.yaml"}, dir);
  out.took = std::chrono::duration<double>(Clock::now() - t0).count();
  out.runs = lines_of(runs_log);
  out.states = states(db, dir);
  out.site_limits =
      run_dlsweep(db, {"query", "SELECT reason FROM events WHERE kind = 'site_limit'", "--format", "csv"}, dir).out;
  return out;
}

void check_all_ran_once(const Sweep& s, int n) {
  INFO(s.r.out << s.r.err);
  INFO("took " << s.took << " s");
  REQUIRE(s.r.exit_code == 0);
  CHECK(s.states == fmt::format("state,COUNT(*)\nCOMPLETE,{}\n", n));
  // Nothing ran twice: n runs, n different trial directories.
  CHECK(s.runs.size() == static_cast<std::size_t>(n));
  CHECK(std::set<std::string>(s.runs.begin(), s.runs.end()).size() == static_cast<std::size_t>(n));
  // Never the controller-is-down advice, never a lost trial.
  CHECK(s.r.err.find("overloaded or down") == std::string::npos);
  CHECK(s.r.err.find("no answer within") == std::string::npos);
  CHECK(s.r.err.find("lost") == std::string::npos);
}

}  // namespace

TEST_CASE("slurm controller limits: MaxJobCount=6: a 20-trial sweep (one array of 20) all COMPLETE, each run once, "
          "the limit named",
          "[slurm][limits][controller]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  // MinJobAge 2: finished records leave the controller within seconds (600 would hold the
  // first five for ten minutes, as on a real site with MinJobAge=300 and a small MaxJobCount).
  auto s = run_sweep({"--max-job-count", "6", "--min-job-age", "2"}, 20, "e2e-maxjobcount");
  check_all_ran_once(s, 20);
  // The limit where the user looks: the progress line names MaxJobCount and the number,
  // and it is recorded for `status` and serve.
  CHECK(s.r.err.find("the controller refuses more than 5 jobs (MaxJobCount") != std::string::npos);
  CHECK(s.r.err.find("waiting") != std::string::npos);
  CHECK(s.site_limits.find("MaxJobCount") != std::string::npos);
  CHECK(s.took < 120);
}

TEST_CASE("slurm controller limits: MaxArraySize=4 with MaxJobCount=6: 10 trials all COMPLETE, each run once",
          "[slurm][limits][controller]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  auto s = run_sweep({"--max-job-count", "6", "--max-array-size", "4", "--min-job-age", "2"}, 10, "e2e-maxarraysize");
  check_all_ran_once(s, 10);
  CHECK(s.r.err.find("MaxJobCount") != std::string::npos);
  CHECK(s.took < 120);
}

TEST_CASE("slurm controller limits: MaxSubmitJobs=4 from slurmdbd: 10 trials all COMPLETE, each run once, the limit "
          "named",
          "[slurm][limits][controller]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  // What a site with accounting answers past the limit, from slurmctld (not a wrapper): sbatch
  // fails at once with "Job violates accounting/QOS policy (job submit limit, ...)".
  auto s = run_sweep({"--max-submit-jobs", "4", "--min-job-age", "2"}, 10, "e2e-maxsubmitjobs");
  check_all_ran_once(s, 10);
  CHECK(s.r.err.find("the site allows 4 jobs for your association (AssocMaxSubmitJobLimit)") != std::string::npos);
  CHECK(s.r.err.find("waiting") != std::string::npos);
  CHECK(s.site_limits.find("AssocMaxSubmitJobLimit") != std::string::npos);
  CHECK(s.took < 120);
}
