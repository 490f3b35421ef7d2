// The controller's own refusals on the real local Slurm cluster (issue 38): slurmctld started
// by scripts/slurm-local.sh with MaxJobCount=6 (each array task counts one; finished jobs too
// until MinJobAge) and MaxArraySize=4. The real sbatch, past MaxJobCount, does not fail: it
// prints "Slurm temporarily unable to accept job, sleeping and retrying" and retries for two
// minutes. Before the fix dlsweep killed it at 60 s as "the controller may be overloaded or
// down" and resubmitted the same array: nothing ran. Now a 20-trial sweep finishes, every
// trial run exactly once, and the limit is named in the progress.
// The wrapper-played site limits (QOSMaxSubmitJobPerUserLimit) are in slurm_limits_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"
#include "slurm_site.hpp"

using namespace slurm_test;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace slurm_site;

TEST_CASE("slurm controller limits: MaxJobCount=6 and MaxArraySize=4: 20 trials all COMPLETE, each run once, "
          "the limit named",
          "[slurm][limits][controller]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  // MinJobAge 2: finished records leave the controller within seconds (600 would hold the
  // first five for ten minutes, as on a real site with MinJobAge=300 and a small MaxJobCount).
  LocalCluster cluster(1, 1001, {"--max-job-count", "6", "--max-array-size", "4", "--min-job-age", "2"});
  REQUIRE(cluster.up);
  auto conf = cluster.run({"scontrol", "show", "config"});
  REQUIRE(conf.out.find("MaxJobCount             = 6") != std::string::npos);
  REQUIRE(conf.out.find("MaxArraySize            = 4") != std::string::npos);
  auto dir = fresh_dir("slurm-controller-limits");
  const auto runs_log = dir / "runs.log";
  std::string space;
  for (int i = 1; i <= 20; ++i) space += (space.empty() ? "" : ", ") + std::to_string(i);
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: e2e-maxjobcount
backend: {{kind: slurm, max_concurrent: 20, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sh, -c, "pwd >> '{}'; sleep 1; echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [{}]}}
)", cluster.conf, runs_log.string(), space);
  auto db = dir / "sweep.db";
  const auto t0 = Clock::now();
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  INFO(r.out << r.err);
  INFO("took " << took << " s");
  REQUIRE(r.exit_code == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,20\n");
  // Nothing ran twice: 20 runs, 20 different trial directories.
  auto runs = lines_of(runs_log);
  CHECK(runs.size() == 20);
  CHECK(std::set<std::string>(runs.begin(), runs.end()).size() == 20);
  // The limit where the user looks: the progress line names MaxJobCount and the number.
  CHECK(r.err.find("the controller refuses more than 5 jobs (MaxJobCount") != std::string::npos);
  CHECK(r.err.find("waiting") != std::string::npos);
  // Never the controller-is-down advice, never a lost trial.
  CHECK(r.err.find("overloaded or down") == std::string::npos);
  CHECK(r.err.find("no answer within") == std::string::npos);
  CHECK(r.err.find("lost") == std::string::npos);
  // Recorded for `status` and serve.
  auto sl = run_dlsweep(db, {"query", "SELECT reason FROM events WHERE kind = 'site_limit'", "--format", "csv"}, dir);
  CHECK(sl.out.find("MaxJobCount") != std::string::npos);
  CHECK(took < 240);
}
