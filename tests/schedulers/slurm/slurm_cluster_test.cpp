// SlurmBackend against a real Slurm controller: a private cluster per test, started with
// scripts/slurm-local.sh and stopped (daemons and jobs) at the end of the test. Skipped
// with a warning where Slurm is not installed. Each driver-specific test runs through the
// CLI driver and, when built with libslurm, the API driver.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/driver.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched;
using namespace slurm_test;
using K = JobEventKind;

namespace {

#define NEED_CLUSTER(cluster, ...)                        \
  if (auto why = cluster_unavailable()) {                 \
    WARN("skipped: " << *why);                            \
    return;                                               \
  }                                                       \
  LocalCluster cluster{__VA_ARGS__};                      \
  INFO("slurm-local.sh start: " << cluster.start_output); \
  REQUIRE(cluster.up)

#define NEED_DRIVER(driver)                                                  \
  if (!slurm::driver_available(driver)) {                                    \
    WARN("skipped: the " << driver << " driver is not built (no libslurm)"); \
    return;                                                                  \
  }

struct Harness {
  const LocalCluster& cluster;
  TempDir dir{"dlsweep-slurm-t", kShortTmp};
  boost::asio::io_context io;
  Recorder rec;
  std::vector<std::string> logs;
  std::unique_ptr<SlurmBackend> backend;

  Harness(const LocalCluster& c, const std::string& driver, std::size_t max_concurrent,
          const std::function<void(SlurmOptions&)>& tweak = {})
      : cluster(c) {
    SlurmOptions o;
    o.driver = driver;
    o.slurm_conf = c.conf;
    o.script_dir = dir.path() / "slurm";
    o.max_concurrent = max_concurrent;
    o.poll_min_s = 0.2;
    o.poll_max_s = 1.0;
    o.command_timeout_s = 30;
    if (tweak) tweak(o);
    auto b = SlurmBackend::create(io, o);
    if (!b) FAIL(b.error().message());
    backend = std::move(*b);
    backend->set_event_handler(rec.handler());
    backend->set_log_handler([this](const std::string& m) { logs.push_back(m); });
  }

  JobSpec job(int trial, const std::string& script) const {
    JobSpec s;
    s.study = "cluster";
    s.trial_id = trial;
    s.attempt = 0;
    s.argv = {"/bin/bash", "-c", script};
    s.workdir = dir.path() / ("trial-" + std::to_string(trial));
    return s;
  }
  std::string submit(const JobSpec& s) {
    auto id = backend->submit(s);
    if (!id) FAIL(id.error().message());
    return *id;
  }
  /// Every log a job wrote (slurm-*.out of the batch scripts, trial stdout/stderr), for
  /// failure messages.
  std::string logs_text() const {
    std::string out;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
      auto name = e.path().filename().string();
      if (name.rfind("slurm-", 0) == 0 || name == "stderr.log" || name == "stdout.log")
        out += "--- " + e.path().string() + "\n" + read_file(e.path());
    }
    for (auto& l : logs) out += "--- backend: " + l + "\n";
    for (auto& e : std::filesystem::directory_iterator(cluster.dir.path() / "log")) {
      std::string text = read_file(e.path());
      if (text.size() > 3000) text = "..." + text.substr(text.size() - 3000);
      out += "--- " + e.path().string() + "\n" + text;
    }
    return out;
  }
  bool run_until_done(const std::vector<std::string>& ids, double limit_s) {
    return run_until(io, [&] { return rec.all_done(ids); }, limit_s);
  }
  bool run_until_kind(const std::string& id, K kind, double limit_s, int count = 1) {
    return run_until(
        io,
        [&] {
          int n = 0;
          for (auto k : rec.kinds(id)) n += k == kind ? 1 : 0;
          return n >= count;
        },
        limit_s);
  }
};

/// Highest number of [start, end) intervals that overlap.
int max_overlap(std::vector<std::pair<double, double>> iv) {
  std::vector<std::pair<double, int>> ev;
  for (auto [s, e] : iv) {
    ev.push_back({s, +1});
    ev.push_back({e, -1});
  }
  std::sort(ev.begin(), ev.end());  // at equal times the end (-1) comes first
  int cur = 0, best = 0;
  for (auto [t, d] : ev) best = std::max(best, cur += d);
  return best;
}

}  // namespace

TEST_CASE("slurm: six jobs go out as one throttled array - exit codes come back", "[slurm][cluster]") {
  const std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  NEED_DRIVER(driver);
  NEED_CLUSTER(cluster);
  Harness h(cluster, driver, 2);
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    JobSpec s = h.job(i, "date +%s.%N > t0; pwd > pwd.txt; echo out-$DLSWEEP_X; echo err-$DLSWEEP_X >&2; "
                         "sleep 1; date +%s.%N > t1; exit $DLSWEEP_CODE");
    s.env = {{"DLSWEEP_X", std::to_string(i)}, {"DLSWEEP_CODE", i == 2 ? "3" : "0"}};
    ids.push_back(h.submit(s));
  }
  REQUIRE(h.run_until_done(ids, 60));
  CHECK(h.backend->stats().submissions == 1);  // one sbatch for all six
  std::vector<std::pair<double, double>> intervals;
  for (int i = 0; i < 6; ++i) {
    INFO("job " << i << " " << ids[i]);
    CHECK(h.rec.kinds(ids[i]) == std::vector<K>{K::queued, K::started, K::exited});
    const JobEvent* t = h.rec.terminal(ids[i]);
    CHECK(t->exit_code == (i == 2 ? 3 : 0));
    CHECK(t->trial_id == i);
    CHECK(t->native_id == h.rec.events.front().native_id.substr(0, h.rec.events.front().native_id.find('_')) + "_" +
                              std::to_string(i));
    auto dir = h.dir.path() / ("trial-" + std::to_string(i));
    CHECK(read_file(dir / "pwd.txt") == dir.string() + "\n");
    CHECK(read_file(dir / "stdout.log") == "out-" + std::to_string(i) + "\n");
    CHECK(read_file(dir / "stderr.log") == "err-" + std::to_string(i) + "\n");
    intervals.push_back({std::stod(read_file(dir / "t0")), std::stod(read_file(dir / "t1"))});
  }
  CHECK(max_overlap(intervals) <= 2);  // the %2 throttle
  CHECK(h.backend->active() == 0);
}

TEST_CASE("slurm: hostile values in every study field run as data, never as code", "[slurm][cluster][security]") {
  const std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  NEED_DRIVER(driver);
  NEED_CLUSTER(cluster);
  const std::string pwned = "/tmp/dlsweep-pwned-" + std::to_string(getpid());
  const std::string evil = "$(touch " + pwned + ") `touch " + pwned + "` ';touch " + pwned + ";' \"\\\" #";
  Harness h(cluster, driver, 4, [&](SlurmOptions& o) {
    if (o.driver == "cli") o.extra_sbatch = {"#SBATCH --mail-user=" + evil};
  });
  JobSpec s = h.job(1, "printf '%s\\0' \"$@\" > args.bin; printf '%s' \"$EVIL\" > env.bin; pwd > pwd.txt");
  s.study = "inj " + evil;
  s.argv.push_back("argv0");
  s.argv.push_back(evil);
  s.argv.push_back("two\nlines " + evil);
  s.env["EVIL"] = evil + "\n$HOME";
  s.workdir = h.dir.path() / ("trial " + evil);
  std::string id = h.submit(s);
  REQUIRE(h.run_until_done({id}, 60));
  REQUIRE(h.rec.terminal(id)->kind == K::exited);
  CHECK(h.rec.terminal(id)->exit_code == 0);
  CHECK(read_file(s.workdir / "args.bin") == evil + std::string(1, '\0') + "two\nlines " + evil + std::string(1, '\0'));
  CHECK(read_file(s.workdir / "env.bin") == evil + "\n$HOME");
  CHECK(read_file(s.workdir / "pwd.txt") == s.workdir.string() + "\n");
  auto found = h.backend->find_jobs(s.study);  // the job name survived sbatch's parser intact
  REQUIRE(found.has_value());
  REQUIRE(found->size() == 1);
  CHECK((*found)[0].token == s.token());
  CHECK_FALSE(std::filesystem::exists(pwned));

  // A hostile partition passes validation (no blank, no quote) and is refused by Slurm.
  Harness h2(cluster, driver, 4, [&](SlurmOptions& o) { o.partition = "debug$(touch${IFS}" + pwned + ")"; });
  std::string id2 = h2.submit(h2.job(2, "true"));
  REQUIRE(h2.run_until_done({id2}, 60));
  CHECK(h2.rec.terminal(id2)->kind == K::lost);
  CHECK_THAT(h2.rec.terminal(id2)->message, Catch::Contains("partition"));
  CHECK_FALSE(std::filesystem::exists(pwned));
}

TEST_CASE("slurm: a job requeued with scontrol is reported requeued, runs again, and ends", "[slurm][cluster]") {
  const std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  NEED_DRIVER(driver);
  NEED_CLUSTER(cluster);
  Harness h(cluster, driver, 2);
  std::string id = h.submit(h.job(1, "echo ${SLURM_RESTART_COUNT:-0} >> runs; [ -e once ] && exit 0; touch once; sleep 60"));
  REQUIRE(h.run_until_kind(id, K::started, 30));
  // RUNNING comes before the batch script's first line: requeued at once on a loaded machine,
  // the first run never wrote its line (CI saw "1\n" alone). Requeue once it has.
  REQUIRE(test_support::wait_until([&] { return std::filesystem::exists(h.dir.path() / "trial-1" / "once"); }));
  const std::string native = h.backend->native_id(id);
  auto rq = cluster.run({"scontrol", "requeue", native});
  REQUIRE(rq.exit_code == 0);
  REQUIRE(h.run_until_kind(id, K::requeued, 30));
  // It waits ~cred_expire (10 s) before it may start again. Releasing it early with
  // `scontrol update StartTime=now` races the revoked credential of the killed run: the
  // launch then fails ("Job credential revoked", FAILED exit 1), so the test waits. The bound
  // only stops a hang: under ctest -j2 beside a build and `stress` the rerun took over 60 s.
  REQUIRE(h.run_until_done({id}, 240));
  INFO(h.logs_text());
  CHECK(h.rec.kinds(id) == std::vector<K>{K::queued, K::started, K::requeued, K::started, K::exited});
  CHECK(h.rec.terminal(id)->exit_code == 0);
  CHECK(read_file(h.dir.path() / "trial-1" / "runs") == "0\n1\n");
}

TEST_CASE("slurm: a job held after a failed launch is cancelled and ends lost, with the controller's reason",
          "[slurm][cluster][pending]") {
  const std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  NEED_DRIVER(driver);
  NEED_CLUSTER(cluster);
  cluster.set_prolog(cluster.failing_prolog());  // drains the node, holds the job
  Harness h(cluster, driver, 2);
  std::string id = h.submit(h.job(1, "exit 0"));
  REQUIRE(h.run_until_done({id}, 240));
  INFO(h.logs_text());
  // Slurm shows the job RUNNING (CONFIGURING) while its prolog runs: a poll that falls in that
  // moment (a loaded machine's prolog is slow) sees it start before the failed launch holds it.
  auto kinds = h.rec.kinds(id);
  if (kinds.size() == 3 && kinds[1] == K::started) kinds.erase(kinds.begin() + 1);
  CHECK(kinds == std::vector<K>{K::queued, K::lost});
  CHECK(h.rec.terminal(id)->launch_failed);
  CHECK_THAT(h.rec.terminal(id)->message, Catch::Contains("launch failed requeued held"));
  REQUIRE_FALSE(h.rec.pending(id).empty());
  CHECK(h.rec.pending(id).back().message == "launch failed requeued held");
  CHECK(h.rec.pending(id).back().pending_class == PendingClass::notable);
  // Cancelled on the controller, not left held.
  CHECK_THAT(cluster.run({"squeue", "-h", "-j", h.backend->native_id(id), "-o", "%T"}).out, !Catch::Contains("PENDING"));
}

TEST_CASE("slurm: at the time-limit warning the trial checkpoints, the script requeues it, the rerun completes",
          "[slurm][cluster][slow]") {
  NEED_CLUSTER(cluster);
  Harness h(cluster, "cli", 2, [](SlurmOptions& o) { o.signal_lead_s = 50; });
  // Like dlsweep-train: on USR2, write a checkpoint and exit 75; resume from it next time.
  JobSpec s = h.job(1,
                    "if [ -e checkpoint ]; then echo resumed >> log; exit 0; fi; "
                    "trap 'echo $(date +%s) > checkpoint; exit 75' USR2; "
                    "while :; do sleep 0.2; done");
  s.timeout_s = 60;  // --time=1: the warning comes at most 50 s before the limit
  std::string id = h.submit(s);
  REQUIRE(h.run_until_kind(id, K::requeued, 80));
  REQUIRE(h.run_until_done({id}, 60));
  CHECK(h.rec.kinds(id) == std::vector<K>{K::queued, K::started, K::requeued, K::started, K::exited});
  CHECK(h.rec.terminal(id)->exit_code == 0);
  CHECK(std::filesystem::exists(h.dir.path() / "trial-1" / "checkpoint"));
  CHECK(read_file(h.dir.path() / "trial-1" / "log") == "resumed\n");
  CHECK_THAT(read_file(h.dir.path() / "trial-1" / "stderr.log"), Catch::Contains("requeueing"));
}

TEST_CASE("slurm: a controller stopped and restarted mid-run loses no job", "[slurm][cluster]") {
  const std::string driver = GENERATE(as<std::string>{}, "cli", "api");
  NEED_DRIVER(driver);
  NEED_CLUSTER(cluster);
  // squeue keeps retrying a dead controller for ~9 s; a 2 s deadline makes the CLI driver
  // see the outage as failed polls. libslurm calls just block until the controller is back.
  Harness h(cluster, driver, 4, [](SlurmOptions& o) { o.command_timeout_s = 2; });
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(h.submit(h.job(i, "sleep 5; exit " + std::to_string(i))));
  for (auto& id : ids) REQUIRE(h.run_until_kind(id, K::started, 30));
  cluster.stop_controller();
  run_until(h.io, [] { return false; }, 3.0);  // the backend polls a dead controller meanwhile
  REQUIRE(cluster.start());
  REQUIRE(h.run_until_done(ids, 90));
  for (int i = 0; i < 3; ++i) {
    INFO(ids[i]);
    CHECK(h.rec.terminal(ids[i])->kind == K::exited);
    CHECK(h.rec.terminal(ids[i])->exit_code == i);
  }
  if (driver == "cli") {
    CHECK(h.backend->stats().query_failures >= 1);
    bool logged = std::any_of(h.logs.begin(), h.logs.end(), [](const std::string& m) {
      return m.find("polling the controller failed") != std::string::npos;
    });
    CHECK(logged);
  }
}

TEST_CASE("slurm: cancelling a running array task - find_jobs lists the study's jobs", "[slurm][cluster]") {
  NEED_CLUSTER(cluster);
  Harness h(cluster, "cli", 3);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(h.submit(h.job(i, "sleep 60")));
  for (auto& id : ids) REQUIRE(h.run_until_kind(id, K::started, 30));
  auto found = h.backend->find_jobs("cluster");
  REQUIRE(found.has_value());
  REQUIRE(found->size() == 3);
  std::set<std::string> tokens;
  for (auto& f : *found) tokens.insert(f.token);
  CHECK(tokens == std::set<std::string>{"cluster/0/0", "cluster/1/0", "cluster/2/0"});
  CHECK(h.backend->find_jobs("other-study")->empty());

  h.backend->cancel(ids[1]);
  REQUIRE(h.run_until_done({ids[1]}, 30));
  CHECK(h.rec.kinds(ids[1]) == std::vector<K>{K::queued, K::started, K::cancelled});
  CHECK(h.rec.terminal(ids[1])->message == "cancelled");
  CHECK(h.rec.terminal(ids[0]) == nullptr);
  h.backend->cancel(ids[0]);
  h.backend->cancel(ids[2]);
  REQUIRE(h.run_until_done(ids, 30));
  CHECK(h.backend->stats().cancel_calls == 2);
}

TEST_CASE("slurm: arrays are split at the controller's MaxArraySize", "[slurm][cluster]") {
  NEED_CLUSTER(cluster, 1, 4);
  Harness h(cluster, "cli", 10);
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(h.submit(h.job(i, "exit 0")));
  REQUIRE(h.run_until_done(ids, 60));
  CHECK(h.backend->stats().max_array_size == 4);
  CHECK(h.backend->stats().submissions == 3);
  for (auto& id : ids) CHECK(h.rec.terminal(id)->kind == K::exited);
  std::set<std::string> arrays;
  for (auto& id : ids) arrays.insert(h.rec.terminal(id)->native_id.substr(0, h.rec.terminal(id)->native_id.find('_')));
  CHECK(arrays.size() == 3);
}

TEST_CASE("slurm: a multi-rank job starts its ranks with srun", "[slurm][cluster]") {
  NEED_CLUSTER(cluster);
  Harness h(cluster, "cli", 2);
  JobSpec s = h.job(1, "echo rank $SLURM_PROCID >> ranks.txt");
  s.ranks = 2;
  std::string id = h.submit(s);
  REQUIRE(h.run_until_done({id}, 60));
  CHECK(h.rec.terminal(id)->kind == K::exited);
  CHECK(h.rec.terminal(id)->exit_code == 0);
  std::string ranks = read_file(h.dir.path() / "trial-1" / "ranks.txt");
  CHECK(ranks.find("rank 0") != std::string::npos);
  CHECK(ranks.find("rank 1") != std::string::npos);
}
