// `dlsweep submit` with `backend: {kind: slurm}` against a real Slurm controller started by
// scripts/slurm-local.sh: the sweep goes out as a throttled job array, its results match a
// local-backend run of the same study and seed, and `dlsweep cancel` stops a live sweep.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "../slurm/slurm_test_support.hpp"
#include "run_command.hpp"

using nlohmann::json;
using namespace slurm_test;
namespace fs = std::filesystem;

namespace {

std::string study_yaml(const std::string& name, const std::string& backend, const fs::path& runs) {
  return fmt::format(R"(
name: {}
backend: {}
trial:
  trainer: {{model: mlp, hidden: [64], epochs: 1, train_subset: 3000, test_subset: 1000, threads: 1}}
objective: {{metric: val_acc, mode: max, target: 0.5}}
space:
  batch_size: [64, 128, 256]
  lr_rule: [linear, sqrt]
fixed: {{base_batch: 64, base_lr: 0.05, seed: 3}}
runs_dir: {}
)", name, backend, runs.string());
}

std::map<std::string, double> values_by_params(const std::string& results_json) {
  std::map<std::string, double> out;
  for (const auto& t : json::parse(results_json)) {
    json p = t["params"];
    out[fmt::format("{}/{}", p["batch_size"].get<int>(), p["lr_rule"].get<std::string>())] = t["value"].get<double>();
  }
  return out;
}

}  // namespace

TEST_CASE("slurm: a sweep runs as one throttled array and matches the local backend, through both drivers") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  // libslurm is optional at build time; the CLI driver is always there.
  std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-sweep-" + driver);
  std::ofstream(dir / "slurm.yaml") << study_yaml(
      "e2e-slurm", fmt::format("{{kind: slurm, driver: {}, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 2}}",
                  driver, cluster.conf),
      dir / "runs");
  std::ofstream(dir / "local.yaml") << study_yaml("e2e-slurm-local", "{kind: local, max_concurrent: 2}", dir / "runs");
  auto db = dir / "sweep.db";

  auto r = run_dlsweep(db, {"submit", "slurm.yaml"}, dir);
  INFO(driver << ": " << r.err);
  if (driver == "api" && r.err.find("libslurm") != std::string::npos && r.exit_code != 0) {
    WARN("api driver not built here (no libslurm): " << r.err);
    return;
  }
  REQUIRE(r.exit_code == 0);
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(states.out == "state,COUNT(*)\nCOMPLETE,6\n");
  // All six trials were tasks of one array: native ids "<array>_<task>".
  auto arrays = run_dlsweep(db, {"query",
                                 "SELECT COUNT(DISTINCT substr(job_id, 1, instr(job_id, '_') - 1)), COUNT(DISTINCT job_id) "
                                 "FROM jobs WHERE backend = 'slurm' AND instr(job_id, '_') > 0",
                                 "--format", "csv"},
                            dir);
  CHECK(arrays.out.substr(arrays.out.find('\n') + 1) == "1,6\n");

  REQUIRE(run_dlsweep(db, {"submit", "local.yaml"}, dir).exit_code == 0);
  auto on_slurm = values_by_params(run_dlsweep(db, {"results", "e2e-slurm", "--format", "json"}, dir).out);
  auto on_local = values_by_params(run_dlsweep(db, {"results", "e2e-slurm-local", "--format", "json"}, dir).out);
  REQUIRE(on_slurm.size() == 6);
  CHECK(on_slurm == on_local);  // same params and seed: the same trajectories, bit for bit
}

TEST_CASE("slurm: dlsweep cancel stops a running sweep and records CANCELLED") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-cancel");
  std::ofstream(dir / "slow.yaml") << fmt::format(R"(
name: e2e-slurm-cancel
backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sleep, "120"]
objective: {{metric: loss, mode: min}}
space: {{x: [1, 2, 3]}}
)", cluster.conf);
  auto db = dir / "sweep.db";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen("/dev/null", "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "slow.yaml", (char*)nullptr);
    ::_exit(127);
  }
  bool running = false;
  for (int i = 0; i < 300 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto q = run_dlsweep(db, {"query", "SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'", "--format", "csv"}, dir);
    running = q.out == "COUNT(*)\n2\n";
  }
  REQUIRE(running);
  auto c = run_dlsweep(db, {"cancel", "e2e-slurm-cancel"}, dir);
  INFO(c.err);
  CHECK(c.exit_code == 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WEXITSTATUS(status) == 130);
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  // All three went out as one array (two running, one held by the throttle).
  CHECK(states.out == "state,COUNT(*)\nCANCELLED,3\n");
  // Nothing of the study is left on the controller.
  bool empty = false;
  for (int i = 0; i < 100 && !empty; ++i) {
    auto sq = cluster.run({"squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING"});
    empty = sq.out.find_first_not_of(" \n") == std::string::npos;
    if (!empty) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(empty);
}

TEST_CASE("slurm: examples/slurm.yaml runs on the local cluster (shortened)") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-example");
  YAML::Node study = YAML::LoadFile(std::string(DLSWEEP_SOURCE_DIR) + "/examples/slurm.yaml");
  // The site keys of the example name a partition this cluster does not have.
  study["backend"]["partition"] = "debug";
  study["backend"]["slurm_conf"] = cluster.conf;
  study["backend"]["cpus_per_task"] = 1;
  study["backend"]["poll_min_s"] = 0.3;
  study["backend"]["poll_max_s"] = 2;
  study["trial"]["trainer"]["epochs"] = 1;
  study["trial"]["trainer"]["threads"] = 1;
  study["trial"]["trainer"]["train_subset"] = 3000;
  study["trial"]["trainer"]["test_subset"] = 1000;
  study["search"]["trials"] = 4;
  study["runs_dir"] = (dir / "runs").string();
  std::ofstream(dir / "slurm.yaml") << YAML::Dump(study) << "\n";
  auto db = dir / "sweep.db";
  auto dry = run_dlsweep(db, {"submit", "--dry-run", "slurm.yaml"}, dir);
  CHECK(dry.exit_code == 0);
  CHECK(dry.err.find("nothing was submitted") != std::string::npos);
  CHECK_FALSE(fs::exists(db));
  auto r = run_dlsweep(db, {"submit", "slurm.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(states.out == "state,COUNT(*)\nCOMPLETE,4\n");
}

TEST_CASE("slurm: submit --as-job runs the orchestrator as a job of its own") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-as-job");
  std::ofstream(dir / "quick.yaml") << fmt::format(R"(
name: e2e-as-job
backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sh, -c, "echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
space: {{x: [1, 2, 3]}}
)", cluster.conf);
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "--as-job", "quick.yaml"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find_first_of("0123456789") == 0);  // the job id
  bool finished = false;
  for (int i = 0; i < 600 && !finished; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!fs::exists(db)) continue;
    auto q = run_dlsweep(db, {"query", "SELECT state FROM studies", "--format", "csv"}, dir);
    finished = q.out == "state\nFINISHED\n";
  }
  REQUIRE(finished);
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(states.out == "state,COUNT(*)\nCOMPLETE,3\n");
}
