// Population-based training on a real Slurm controller (scripts/slurm-local.sh): every
// generation goes out as its own job array, each member's next interval is a new job that
// resumes from its parent's checkpoint copied on the shared runs directory, and the trials
// reach exactly the values the same study reaches on the local backend.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"

using nlohmann::json;
using namespace slurm_test;
namespace fs = std::filesystem;

namespace {

std::string pbt_yaml(const std::string& name, const std::string& backend, const fs::path& runs) {
  return fmt::format(R"(
name: {}
backend: {}
trial:
  trainer: {{model: mlp, hidden: [32], epochs: 2, eval_every: 1, train_subset: 2000, test_subset: 500, threads: 1}}
objective: {{metric: val_acc, mode: max}}
search:
  algorithm: pbt
  seed: 4
  population: 2
  interval: {{by: epoch, every: 1}}
  perturb: {{base_lr: [0.5, 2], batch_size: [0.5, 2]}}
space:
  base_lr: {{log_uniform: [0.01, 0.3]}}
  batch_size: [32, 64, 128]
fixed: {{momentum: 0.9, seed: 5}}
runs_dir: {}
)", name, backend, runs.string());
}

std::map<std::int64_t, double> values_by_number(const std::string& results_json) {
  std::map<std::int64_t, double> out;
  for (const auto& t : json::parse(results_json)) out[t["trial"].get<std::int64_t>()] = t["value"].get<double>();
  return out;
}

/// Writes `slurm_name` on the Slurm `backend` and `local_name` (the same study, local
/// backend) into `dir`, runs the Slurm one and checks its four trials completed.
fs::path run_pbt_on_slurm(const fs::path& dir, const std::string& slurm_name, const std::string& backend,
                          const std::string& local_name) {
  std::ofstream(dir / "slurm.yaml") << pbt_yaml(slurm_name, backend, dir / "runs");
  std::ofstream(dir / "local.yaml") << pbt_yaml(local_name, "{kind: local, max_concurrent: 2}", dir / "runs");
  const auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "slurm.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(states.out == "state,COUNT(*)\nCOMPLETE,4\n");
  return db;
}

/// Runs the local twin and checks the Slurm run reached exactly its values.
void check_matches_local(const fs::path& db, const fs::path& dir, const std::string& slurm_name,
                         const std::string& local_name) {
  REQUIRE(run_dlsweep(db, {"submit", "local.yaml"}, dir).exit_code == 0);
  const auto on_slurm = values_by_number(run_dlsweep(db, {"results", slurm_name, "--format", "json"}, dir).out);
  const auto on_local = values_by_number(run_dlsweep(db, {"results", local_name, "--format", "json"}, dir).out);
  REQUIRE(on_slurm.size() == 4);
  CHECK(on_slurm == on_local);  // same decisions, same checkpoints, the same trajectories bit for bit
}

}  // namespace

TEST_CASE("slurm: a pbt study runs a job array per generation and matches the local backend") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-pbt");
  const auto db = run_pbt_on_slurm(
      dir, "e2e-slurm-pbt",
      fmt::format("{{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 2}}", cluster.conf),
      "e2e-local-pbt");
  // Two generations, two arrays of two tasks: a member's second interval is a new job.
  auto arrays = run_dlsweep(db, {"query",
                                 "SELECT COUNT(DISTINCT substr(job_id, 1, instr(job_id, '_') - 1)), COUNT(DISTINCT job_id) "
                                 "FROM jobs WHERE backend = 'slurm' AND instr(job_id, '_') > 0",
                                 "--format", "csv"},
                            dir);
  CHECK(arrays.out.substr(arrays.out.find('\n') + 1) == "2,4\n");
  // The second generation resumed from copied checkpoints (it did not start over at step 0):
  // its first record is at epoch 2 of the member's run, past the interval it did not train.
  auto first = run_dlsweep(db, {"query",
                                "SELECT t.number, MIN(r.epoch) FROM records r JOIN trials t ON t.id = r.trial_id "
                                "JOIN studies s ON s.id = t.study_id WHERE s.name = 'e2e-slurm-pbt' AND r.kind = 'eval' "
                                "GROUP BY t.number ORDER BY t.number",
                                "--format", "csv"},
                           dir);
  CHECK(first.out == "number,MIN(r.epoch)\n0,1\n1,1\n2,2\n3,2\n");
  check_matches_local(db, dir, "e2e-slurm-pbt", "e2e-local-pbt");
  fs::remove_all(dir);
}

TEST_CASE("slurm workers: a pbt study runs every interval inside two pilot allocations and matches the local backend",
          "[slurm][workers][pbt]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-pbt-workers");
  const auto db = run_pbt_on_slurm(
      dir, "e2e-slurm-pbt-w",
      fmt::format("{{kind: slurm, workers: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 2, time: 10}}", cluster.conf),
      "e2e-local-pbt-w");
  // Every interval was a task of the pool, and the two allocations ran them all: the second
  // generation waited in no queue.
  auto jobs = run_dlsweep(db, {"query", "SELECT COUNT(*) FROM jobs WHERE job_id LIKE 'pool:%'", "--format", "csv"}, dir);
  CHECK(jobs.out == "COUNT(*)\n4\n");
  std::set<std::string> workers;
  for (const auto& e : fs::directory_iterator(dir / "runs" / "e2e-slurm-pbt-w" / "slurm" / "pool" / "w"))
    workers.insert(e.path().filename().string());
  CHECK(workers == std::set<std::string>{"w1", "w2"});
  check_matches_local(db, dir, "e2e-slurm-pbt-w", "e2e-local-pbt-w");
  fs::remove_all(dir);
}
