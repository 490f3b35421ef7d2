// Trials that cannot start say why, against a real controller started by
// scripts/slurm-local.sh (issue 18 §5). A failing Prolog makes Slurm hold the job ("launch
// failed requeued held") and drain the node, as a controller restarted on stale state did:
// dlsweep cancels the held job, retries the trial as a new job, says why it waits (the
// drained node) in its output and in `dlsweep status`, warns after backend.pending_warn, and
// the retry completes once the node is back. A job a person holds (`scontrol hold`) is shown
// as such and left alone. The tests edit their private cluster's slurm.conf (Prolog=) and
// reload it with `scontrol reconfigure` (LocalCluster::set_prolog).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>

#include <fmt/format.h>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

using namespace slurm_test;
namespace fs = std::filesystem;

namespace {

// "The node this job needs is drained": Slurm says it either way, depending on which of its
// passes looked at the job last — the reason code with the nodes ("ReqNodeNotAvail,
// UnavailableNodes:localhost") or the description it sets with reason Resources. The tests
// wait for the state (pending on an unavailable node) and accept either wording.
const std::string kDrained =
    "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions";
const std::string kNodeNotAvail = "ReqNodeNotAvail";
const std::string kNodeUnavailableRe = "(Nodes required for job are DOWN, DRAINED or reserved for jobs in higher "
                                       "priority partitions|ReqNodeNotAvail[^\n]*?)";

/// True when `text` holds `before`, one of the words for an unavailable node, then `after`
/// (both regular expressions).
bool says_node_unavailable(const std::string& text, const std::string& before, const std::string& after) {
  return std::regex_search(text, std::regex(before + kNodeUnavailableRe + after));
}

std::string one_trial_study(const std::string& name, const std::string& conf, const std::string& extra_backend) {
  return fmt::format(R"(
name: {}
backend: {{kind: slurm, max_concurrent: 1, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1{}}}
trial:
  command: [/bin/sh, -c, "echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
  max_retries: 1
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [1]}}
)", name, conf, extra_backend);
}

bool wait_until(const std::function<bool()>& ok, double limit_s) {
  return test_support::wait_until(ok, std::chrono::milliseconds(static_cast<long>(limit_s * 1000)),
                                  std::chrono::milliseconds(200));
}

/// A running `dlsweep submit study.yaml`: its log, `dlsweep status`, its end.
struct Sweep {
  fs::path dir, db;
  std::string study;
  pid_t pid = -1;
  Sweep(const std::string& name, const std::string& yaml) : dir(fresh_dir(name)), db(dir / "sweep.db"), study(name) {
    std::ofstream(dir / "study.yaml") << yaml;
    pid = spawn_dlsweep(dir, db, {"submit", "study.yaml"});
  }
  ~Sweep() {
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  std::string log() const { return read_file(dir / "dlsweep-runs" / study / "orchestrator.log"); }
  std::string status() const { return run_dlsweep(db, {"status", study, "--format", "csv"}, dir).out; }
  std::string query(const std::string& sql) const { return run_dlsweep(db, {"query", sql, "--format", "csv"}, dir).out; }
  /// The exit status of submit, or -1 if it has not ended within `limit_s`.
  int wait(double limit_s) {
    int status = 0;
    if (!wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, limit_s)) return -1;
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

std::string squeue_reason(const LocalCluster& cluster, const std::string& study) {
  return cluster.run({"squeue", "-h", "-n", "dlsweep:" + study, "-o", "%T %r"}).out;
}

}  // namespace

TEST_CASE("slurm: a job held after a failed launch is cancelled and retried; the wait says why", "[pending]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  cluster.set_prolog(cluster.failing_prolog());

  Sweep s("e2e-slurm-held", one_trial_study("e2e-slurm-held", cluster.conf, ", pending_warn: 2"));
  REQUIRE(s.pid > 0);
  // The first job is held after its failed launch, cancelled, and the trial retried: the
  // new job waits for the node that the failed Prolog drained.
  const bool retried_waiting = wait_until([&] {
    const std::string st = s.status();
    return st.find("pending: " + kDrained) != std::string::npos || st.find("pending: " + kNodeNotAvail) != std::string::npos;
  }, 60);
  INFO(s.log() << "\nsqueue: " << squeue_reason(cluster, s.study));
  REQUIRE(retried_waiting);
  CHECK_THAT(s.status(), Catch::Contains("QUEUED,1,"));
  CHECK(wait_until([&] { return s.log().find("warning: trial 0 has been pending for") != std::string::npos; }, 20));
  const std::string log = s.log();
  CHECK_THAT(log, Catch::Contains("launch failed requeued held") && Catch::Contains("trial 0 pending on slurm (job "));
  CHECK_THAT(log, Catch::Contains("trial 0 failed (attempt 0): lost: Slurm could not start it and held it (launch "
                                  "failed requeued held)"));
  // The warning quotes the controller's reason at the time, in whichever words it used.
  CHECK(says_node_unavailable(log, "\\): ", " \\(backend\\.pending_warn: 2 s\\)"));
  // The held job is gone from the queue (cancelled), not left behind.
  CHECK(squeue_reason(cluster, s.study).find("launch failed") == std::string::npos);

  // The node back: the retry runs and completes.
  cluster.set_prolog("");
  cluster.run({"scontrol", "update", "nodename=localhost", "state=resume"});
  CHECK(s.wait(60) == 0);
  CHECK(s.query("SELECT number, state, attempt FROM trials") == "number,state,attempt\n0,COMPLETE,1\n");
  CHECK(s.query("SELECT state FROM jobs ORDER BY id") == "state\nlost\nexited\n");
}

TEST_CASE("slurm: a job a person holds is shown as held and left alone", "[pending]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  // Another job takes every CPU of the node: the trial's job waits its turn (Resources).
  const auto blocker = cluster.run({"sbatch", "--parsable", "-n", "4", "-o", "/dev/null", "--wrap", "sleep 300"});
  REQUIRE(blocker.exit_code == 0);
  Sweep s("e2e-slurm-hold", one_trial_study("e2e-slurm-hold", cluster.conf, ""));
  REQUIRE(s.pid > 0);
  REQUIRE(wait_until([&] { return s.status().find("pending: Resources") != std::string::npos; }, 60));
  CHECK_THAT(s.log(), !Catch::Contains("pending on slurm"));  // a routine wait is no news
  const std::string job = s.query("SELECT job_id FROM jobs");
  REQUIRE(job.rfind("job_id\n", 0) == 0);
  const std::string id = job.substr(7, job.size() - 8);
  cluster.run({"scontrol", "hold", id});
  const bool shown = wait_until([&] { return s.status().find("pending: JobHeldAdmin") != std::string::npos; }, 30);
  INFO(s.log() << "\nsqueue: " << squeue_reason(cluster, s.study));
  REQUIRE(shown);
  CHECK_THAT(s.log(), Catch::Contains(fmt::format("trial 0 pending on slurm (job {}): JobHeldAdmin", id)));
  // Nobody cancels it. The hold passes to the user: a later poll reports that, and the
  // backend's controller calls run in order on one thread, so a cancel decided on seeing
  // JobHeldAdmin would have reached the controller before that poll.
  cluster.run({"scontrol", "release", id});
  cluster.run({"scontrol", "uhold", id});
  const std::string user_hold = fmt::format("trial 0 pending on slurm (job {}): JobHeldUser", id);
  const bool moved = wait_until([&] { return s.log().find(user_hold) != std::string::npos; }, 30);
  INFO(s.log() << "\nsqueue: " << squeue_reason(cluster, s.study));
  REQUIRE(moved);
  CHECK_THAT(squeue_reason(cluster, s.study), Catch::Contains("PENDING JobHeldUser"));
  CHECK_THAT(s.status(), Catch::Contains("QUEUED,0,"));

  cluster.run({"scontrol", "release", id});
  cluster.run({"scancel", blocker.out.substr(0, blocker.out.find_first_of(";\n"))});
  CHECK(s.wait(60) == 0);
  CHECK(s.query("SELECT number, state, attempt FROM trials") == "number,state,attempt\n0,COMPLETE,0\n");
}
