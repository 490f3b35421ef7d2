// `dlsweep submit` with `backend: {kind: slurm}` against a real Slurm controller started by
// scripts/slurm-local.sh: the sweep goes out as a throttled job array, its results match a
// local-backend run of the same study and seed, and `dlsweep cancel` stops a live sweep (and,
// with no orchestrator left, the study's jobs through its own slurm_conf).
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

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

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

namespace {

// Starts `dlsweep submit` of three 120 s trials on the cluster (max_concurrent 2) and waits
// until two run. Returns the orchestrator's pid.
pid_t start_slow_sweep(const LocalCluster& cluster, const fs::path& dir, const fs::path& db, const std::string& name) {
  std::ofstream(dir / "slow.yaml") << fmt::format(R"(
name: {}
backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sleep, "120"]
objective: {{metric: loss, mode: min}}
space: {{x: [1, 2, 3]}}
)", name, cluster.conf);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen("/dev/null", "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "slow.yaml", (char*)nullptr);
    ::_exit(127);
  }
  REQUIRE(test_support::wait_until([&] {
    return run_dlsweep(db, {"query", "SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'", "--format", "csv"}, dir).out ==
           "COUNT(*)\n2\n";
  }));
  return pid;
}

// Nothing left on the controller (bounded wait: scancel's effect is asynchronous).
bool controller_empty(const LocalCluster& cluster) {
  return test_support::wait_until([&] {
    auto sq = cluster.run({"squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING"});
    return sq.out.find_first_not_of(" \n") == std::string::npos;
  }, std::chrono::seconds(20), std::chrono::milliseconds(200));
}

}  // namespace

TEST_CASE("slurm: dlsweep cancel stops a running sweep and records CANCELLED") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-cancel");
  auto db = dir / "sweep.db";
  pid_t pid = start_slow_sweep(cluster, dir, db, "e2e-slurm-cancel");
  auto c = run_dlsweep(db, {"cancel", "e2e-slurm-cancel"}, dir);
  INFO(c.err);
  CHECK(c.exit_code == 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WEXITSTATUS(status) == 130);
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  // All three went out as one array (two running, one held by the throttle).
  CHECK(states.out == "state,COUNT(*)\nCANCELLED,3\n");
  CHECK(controller_empty(cluster));  // nothing of the study is left on the controller
}

TEST_CASE("slurm: dlsweep cancel with no orchestrator cancels the jobs through the study's slurm_conf") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-cancel-offline");
  auto db = dir / "sweep.db";
  pid_t pid = start_slow_sweep(cluster, dir, db, "e2e-slurm-offline");
  ::kill(pid, SIGKILL);  // the jobs run on without it
  ::waitpid(pid, nullptr, 0);
  // SLURM_CONF is not in this environment: only the study knows the cluster (the old cancel
  // ran a bare scancel and ignored its failure, leaving the jobs running).
  ::unsetenv("SLURM_CONF");
  auto c = run_dlsweep(db, {"cancel", "e2e-slurm-offline"}, dir);
  INFO(c.err);
  CHECK(c.exit_code == 0);
  CHECK(c.err.find("cancelled 3 trials of e2e-slurm-offline") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "stdout.log"));  // nothing written to the user's directory
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(states.out == "state,COUNT(*)\nCANCELLED,3\n");
  CHECK(controller_empty(cluster));
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
  // Batches larger than the subset are refused at submit: keep the example's batches up to it.
  YAML::Node kept(YAML::NodeType::Sequence);
  for (const auto& b : study["space"]["batch_size"])
    if (b.as<long>() <= 3000) kept.push_back(b);
  study["space"]["batch_size"] = kept;
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
  REQUIRE(test_support::wait_until([&] {
    return fs::exists(db) &&
           run_dlsweep(db, {"query", "SELECT state FROM studies", "--format", "csv"}, dir).out == "state\nFINISHED\n";
  }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  auto states = run_dlsweep(db, {"query", "SELECT state, COUNT(*) FROM trials GROUP BY state", "--format", "csv"}, dir);
  CHECK(states.out == "state,COUNT(*)\nCOMPLETE,3\n");
}

TEST_CASE("slurm: requeued trials (scontrol requeue, time-limit warning) resume from checkpoints and finish like uninterrupted ones") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-requeue");
  // Trial 0: Slurm's time-limit warning (USR2 50 s before a 1-minute limit) arrives ~10 s
  // into every run: dlsweep-train checkpoints, exits 75, the batch script requeues it.
  // Trial 1: also gets `scontrol requeue` from this test while it runs.
  auto study = [&](const std::string& name, const std::string& backend) {
    return fmt::format(R"(
name: {}
backend: {}
trial:
  trainer: {{model: mlp, hidden: [512, 512], epochs: 8, test_subset: 2000, threads: 1,
             checkpoint_every_s: 2}}
objective: {{metric: val_acc, mode: max}}
space: {{batch_size: [128, 256]}}
fixed: {{base_batch: 128, base_lr: 0.05, seed: 5}}
runs_dir: {}
)", name, backend, (dir / "runs").string());
  };
  std::ofstream(dir / "slurm.yaml") << study(
      "e2e-requeue", fmt::format("{{kind: slurm, max_concurrent: 2, slurm_conf: '{}', time: 1, signal_lead_s: 50, "
                                 "poll_min_s: 0.3, poll_max_s: 1}}", cluster.conf));
  std::ofstream(dir / "local.yaml") << study("e2e-requeue-local", "{kind: local, max_concurrent: 2}");
  auto db = dir / "sweep.db";
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen((dir / "submit.err").c_str(), "w", stderr);
    ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "slurm.yaml", (char*)nullptr);
    ::_exit(127);
  }
  // Requeue trial 1 by hand once it has saved a checkpoint (checkpoint_every_s: 2), so the
  // requeued job resumes from it.
  std::string native;
  REQUIRE(test_support::wait_until([&] {
    auto q = run_dlsweep(db, {"query", "SELECT j.job_id FROM jobs j JOIN trials t ON t.id = j.trial_id "
                                       "WHERE t.number = 1 AND t.state = 'RUNNING' AND j.state = 'RUNNING'", "--format", "csv"}, dir);
    auto nl = q.out.find('\n');
    if (q.exit_code == 0 && nl != std::string::npos && nl + 1 < q.out.size()) native = q.out.substr(nl + 1, q.out.find('\n', nl + 1) - nl - 1);
    return !native.empty();
  }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  const fs::path metrics = dir / "runs" / "e2e-requeue" / "trial-0001" / "metrics.jsonl";
  REQUIRE(test_support::wait_until([&] { return read_file(metrics).find("\"checkpoint\"") != std::string::npos; },
                                   std::chrono::seconds(60), std::chrono::milliseconds(100)));
  auto rq = cluster.run({"scontrol", "requeue", native});
  CHECK(rq.exit_code == 0);

  int status = 0;
  ::waitpid(pid, &status, 0);
  INFO(read_file(dir / "submit.err"));
  REQUIRE(WEXITSTATUS(status) == 0);
  auto states = run_dlsweep(db, {"query", "SELECT state, attempt, COUNT(*) FROM trials GROUP BY state, attempt", "--format", "csv"}, dir);
  CHECK(states.out == "state,attempt,COUNT(*)\nCOMPLETE,0,2\n");
  // Trial 1 was requeued (by hand, and maybe by the warning), recorded as events, and
  // resumed from checkpoints. Trial 0 may finish before slurmctld's periodic time-limit
  // check sends the warning (it runs every ~30 s); the backend's own [slow] test covers
  // the warning path end to end.
  auto requeues = run_dlsweep(db, {"query", "SELECT t.number, COUNT(*) FROM events e JOIN trials t ON t.id = e.trial_id "
                                            "WHERE e.reason LIKE 'requeued%' GROUP BY t.number ORDER BY t.number", "--format", "csv"}, dir);
  INFO(requeues.out);
  CHECK(requeues.out.find("\n1,") != std::string::npos);
  auto ckpts = run_dlsweep(db, {"query", "SELECT COUNT(*) > 0 FROM records WHERE kind = 'checkpoint'", "--format", "csv"}, dir);
  CHECK(ckpts.out == "COUNT(*) > 0\n1\n");

  REQUIRE(run_dlsweep(db, {"submit", "local.yaml"}, dir).exit_code == 0);
  auto final_of = [&](const std::string& study) {
    auto q = run_dlsweep(db, {"query", fmt::format("SELECT t.number, m.value FROM metrics m JOIN trials t ON t.id = m.trial_id "
                                                   "JOIN studies s ON s.id = t.study_id WHERE s.name = '{}' AND m.kind = 'final' "
                                                   "AND m.name = 'val_loss' ORDER BY t.number", study), "--format", "json"}, dir);
    return json::parse(q.out);
  };
  auto interrupted = final_of("e2e-requeue");
  auto straight = final_of("e2e-requeue-local");
  REQUIRE(interrupted.size() == 2);
  REQUIRE(straight.size() == 2);
  for (int i = 0; i < 2; ++i) CHECK(interrupted[i]["value"].get<double>() == Approx(straight[i]["value"].get<double>()).epsilon(1e-6));
}
