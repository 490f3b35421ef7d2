// A study the Slurm cluster would refuse is refused before anything is queued or
// recorded, with the study key to fix: `sbatch --test-only` of the rendered script.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"

using namespace slurm_test;
namespace fs = std::filesystem;

namespace {

std::string quick_study(const std::string& name, const std::string& backend_extra) {
  return fmt::format(R"(
name: {}
backend: {{kind: slurm, max_concurrent: 4, poll_min_s: 0.3, poll_max_s: 1{}}}
trial:
  command: [/bin/sh, -c, "echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
  max_retries: 2
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}}
)", name, backend_extra);
}

}  // namespace

TEST_CASE("slurm: a partition the cluster lacks is refused up front, naming backend.partition; nothing queued") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  // The libslurm driver asks through `sbatch --test-only` too.
  std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-refusal-" + driver);
  std::ofstream(dir / "study.yaml") << quick_study(
      "e2e-refused", fmt::format(", driver: {}, partition: gpu, slurm_conf: '{}'", driver, cluster.conf));
  auto db = dir / "sweep.db";
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(driver << ": " << r.err);
  if (driver == "api" && r.err.find("libslurm") != std::string::npos && r.exit_code != 0) {
    WARN("api driver not built here (no libslurm): " << r.err);
    return;
  }
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("backend.partition: partition \"gpu\" does not exist on this cluster") != std::string::npos);
  CHECK(r.err.find("nothing was recorded or queued") != std::string::npos);
  CHECK_FALSE(fs::exists(db));  // no study, no trial, no retries burnt
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "e2e-refused"));
  auto sq = run_command({"squeue", "-h"}, dir, {"SLURM_CONF=" + cluster.conf});
  CHECK(sq.out.find_first_not_of(" \n") == std::string::npos);
  // Fixed, the same study goes through.
  std::ofstream(dir / "study.yaml") << quick_study(
      "e2e-refused", fmt::format(", driver: {}, partition: debug, slurm_conf: '{}'", driver, cluster.conf));
  auto ok = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("slurm: no slurm.conf reachable gets a clear message with the fix, before anything is recorded") {
  if (access("/usr/bin/sbatch", X_OK) != 0) {
    WARN("skipped: sbatch is not installed");
    return;
  }
  auto dir = fresh_dir("slurm-noconf");
  auto db = dir / "sweep.db";
  // A slurm_conf that is not there.
  std::ofstream(dir / "study.yaml") << quick_study("e2e-noconf", ", slurm_conf: /nonexistent/slurm.conf");
  auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("backend.slurm_conf: no Slurm configuration file at /nonexistent/slurm.conf") != std::string::npos);
  CHECK_FALSE(fs::exists(db));
  // None at all (no SLURM_CONF, no default file): sbatch's "resolve_ctls_from_dns_srv".
  if (fs::exists("/etc/slurm/slurm.conf")) {
    WARN("skipped the no-configuration case: /etc/slurm/slurm.conf exists here");
    return;
  }
  std::ofstream(dir / "study.yaml") << quick_study("e2e-noconf", "");
  auto none = run_command({"env", "-u", "SLURM_CONF", DLSWEEP_BIN, "--db", db.string(), "submit", "study.yaml"}, dir);
  INFO(none.err);
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("backend.slurm_conf: no Slurm configuration found") != std::string::npos);
  CHECK(none.err.find("SLURM_CONF") != std::string::npos);
  CHECK(none.err.find("resolve_ctls_from_dns_srv") == std::string::npos);
  CHECK_FALSE(fs::exists(db));
}

TEST_CASE("slurm: a runs_dir under /tmp is refused when a node is another machine, naming runs_dir") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-runs-dir");  // under /tmp: accepted as is, every node is this machine
  auto db = dir / "sweep.db";
  std::ofstream(dir / "study.yaml") << quick_study(
      "e2e-runs-dir", fmt::format(", slurm_conf: '{}'", cluster.conf));
  // A cluster with a real node: an `sinfo` first on PATH that reports one (as sinfo -N -o "%o %n").
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin" / "sinfo") << "#!/bin/sh\necho '127.0.0.1 localhost'\necho '10.1.0.5 node005'\n";
  fs::permissions(dir / "bin" / "sinfo", fs::perms::owner_all);
  const std::string path = (dir / "bin").string() + ":" + std::getenv("PATH");
  auto r = run_command({"env", "PATH=" + path, DLSWEEP_BIN, "--db", db.string(), "submit", "study.yaml"}, dir);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("runs_dir: the runs directory must be on a filesystem the compute nodes share") !=
        std::string::npos);
  CHECK(r.err.find("is under /tmp") != std::string::npos);
  CHECK_FALSE(fs::exists(db));
  CHECK_FALSE(fs::exists(dir / "dlsweep-runs" / "e2e-runs-dir"));
  // With the real sinfo (both nodes are this machine) the same study runs.
  auto ok = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
}
