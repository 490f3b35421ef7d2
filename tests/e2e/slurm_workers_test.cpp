// Pilot workers on the real local Slurm cluster (issue "The site's rules", item 3):
// `backend: {kind: slurm, workers: N}` runs a study's trials inside N long-lived allocations.
// Every trial here appends "start <worker>" / "end" to runs.log in its trial dir, and before it
// starts checks that no earlier run of the same trial is still running (else OVERLAP, with the
// pid and its state): a trial must never run twice at once, and must end exactly once. Running
// means present in /proc and not a zombie: where PID 1 does not reap orphans (micro-VMs, some
// containers), a killed run whose parent died stays a zombie for good, and `kill -0` finds it.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "../support/process_state.hpp"
#include "../support/wait_until.hpp"
#include "run_command.hpp"
#include "slurm_site.hpp"

using namespace slurm_test;
using namespace slurm_site;
namespace fs = std::filesystem;

namespace {

/// A study of `trials` trials, each `seconds` long, on `workers` workers. A run writes its
/// "end" and its final record only when its sleep ran out (`&&`): a run stopped with its
/// worker — the sleep killed by the allocation's TERM a moment before the shell — ends there,
/// as a program killed mid-training does (with `;` the shell went on to write them: seen in CI).
std::string workers_study(const std::string& name, const std::string& conf, int workers, int trials, double seconds,
                          const std::string& extra = "") {
  std::string space;
  for (int i = 1; i <= trials; ++i) space += (i > 1 ? ", " : "") + std::to_string(i);
  return fmt::format(R"(
name: {name}
backend: {{kind: slurm, workers: {workers}, slurm_conf: '{conf}', poll_min_s: 0.3, poll_max_s: 1, time: 10{extra}}}
trial:
  command: [/bin/sh, -c, "for p in $(cat pids.log 2>/dev/null); do s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); case $s in ''|Z|X) ;; *) echo OVERLAP $p $s >> overlap.log ;; esac; done; echo $$ >> pids.log; echo start $DLSWEEP_WORKER >> runs.log; sleep {seconds} && echo end >> runs.log && echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [{space}]}}
)",
                     fmt::arg("name", name), fmt::arg("workers", workers), fmt::arg("conf", conf),
                     fmt::arg("extra", extra), fmt::arg("seconds", seconds), fmt::arg("space", space));
}

struct TrialRuns {
  std::size_t starts = 0, ends = 0, finals = 0;
  bool overlap = false;
  std::string overlap_log;         ///< "OVERLAP <pid> <state>" lines
  std::vector<std::string> lines;  ///< runs.log in order
  std::set<std::string> workers;
};

std::map<std::string, TrialRuns> trial_runs(const fs::path& study_dir) {
  std::map<std::string, TrialRuns> out;
  std::error_code ec;  // not there yet: no runs
  for (const auto& e : fs::directory_iterator(study_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("trial-", 0) != 0) continue;
    TrialRuns& r = out[name];
    r.lines = lines_of(e.path() / "runs.log");
    for (const auto& l : r.lines) {
      if (l.rfind("start ", 0) == 0) {
        ++r.starts;
        r.workers.insert(l.substr(6));
      } else if (l == "end") {
        ++r.ends;
      }
    }
    r.finals = lines_of(e.path() / "metrics.jsonl").size();
    r.overlap = fs::exists(e.path() / "overlap.log");
    r.overlap_log = read_file(e.path() / "overlap.log");
  }
  return out;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string err_of(const fs::path& dir) { return read_file(dir / "err.txt"); }

/// Worker jobs the controller still has for the study.
std::size_t live_worker_jobs(const LocalCluster& cluster, const std::string& study) {
  auto sq = cluster.run({"squeue", "-h", "-r", "-n", "dlsweep:" + study + ".workers", "-t", "PENDING,RUNNING", "-o", "%i"});
  std::size_t n = 0;
  std::istringstream in(sq.out);
  for (std::string l; std::getline(in, l);) n += l.find_first_not_of(" ") != std::string::npos;
  return n;
}

/// Waits until worker w1 runs a trial's command (its runs.log says "start w1", not only the
/// worker's w1/<tag>/run: a worker killed between the two has started nothing the test can see);
/// `victim`: the task's tag.
bool w1_trial_running(const fs::path& pool, const fs::path& study_dir, std::string& victim) {
  return test_support::wait_until([&] {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(pool / "w" / "w1", ec))
      if (e.is_directory(ec) && fs::exists(e.path() / "run", ec)) victim = e.path().filename().string();
    if (victim.empty()) return false;
    for (const auto& [name, r] : trial_runs(study_dir))
      if (r.workers.count("w1")) return true;
    return false;
  }, std::chrono::seconds(60));
}

/// What the controller says of a job: scontrol's JobState (COMPLETING, PENDING, ...), its
/// Restarts count and Reason.
struct JobSeen {
  std::string state, reason;
  int restarts = -1;
};

JobSeen job_seen(const LocalCluster& cluster, const std::string& native) {
  JobSeen s;
  auto r = cluster.run({"scontrol", "-o", "show", "job", native});
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("JobState=(\\S+)"))) s.state = m[1];
  if (std::regex_search(r.out, m, std::regex("Restarts=(\\d+)"))) s.restarts = std::stoi(m[1]);
  if (std::regex_search(r.out, m, std::regex("Reason=(\\S+)"))) s.reason = m[1];
  return s;
}

/// Worker `wid`'s Slurm job, from the environment of its `dlsweep worker` process: the id
/// scancel and scontrol take ("123_0" for an array task) and SLURM_JOB_ID (each array task's
/// own number: what an Epilog is given).
struct WorkerJob {
  std::string native, raw;
};

std::optional<WorkerJob> worker_job(const fs::path& pool, const std::string& wid) {
  auto pg = run_command({"pgrep", "-f", "^" + std::string(DLSWEEP_BIN) + " worker --pool " + pool.string() + " --id " +
                                            wid + " "});
  std::istringstream pids(pg.out);
  for (std::string pid; std::getline(pids, pid);) {
    std::map<std::string, std::string> env;
    std::istringstream in(read_file("/proc/" + pid + "/environ"));
    for (std::string kv; std::getline(in, kv, '\0');)
      if (auto eq = kv.find('='); eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    if (!env.count("SLURM_JOB_ID")) continue;
    WorkerJob j;
    j.raw = env["SLURM_JOB_ID"];
    j.native = env.count("SLURM_ARRAY_JOB_ID") && env.count("SLURM_ARRAY_TASK_ID")
                   ? env["SLURM_ARRAY_JOB_ID"] + "_" + env["SLURM_ARRAY_TASK_ID"]
                   : j.raw;
    return j;
  }
  return std::nullopt;
}

/// Waits until worker `wid` runs a task (its run recorded, no end) that started less than
/// `fresh_s` ago (so that it still runs a few seconds on); `tag` is the task, `trial` the
/// trial directory whose runs.log ends with "start <wid>": the run the test interrupts.
bool worker_busy(const fs::path& pool, const fs::path& study_dir, const std::string& wid, std::string& tag,
                 std::string& trial, double fresh_s = 1e9) {
  return test_support::wait_until([&] {
    // (each look starts afresh: what an earlier look found may have ended since)
    tag.clear();
    trial.clear();
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(pool / "w" / wid, ec)) {
      if (!e.is_directory(ec) || !fs::exists(e.path() / "run", ec) || fs::exists(e.path() / "exit", ec)) continue;
      auto run = nlohmann::json::parse(read_file(e.path() / "run"), nullptr, /*allow_exceptions=*/false);
      if (run.is_object() && run.value("started", 0.0) > now - fresh_s) tag = e.path().filename().string();
    }
    for (const auto& [name, r] : trial_runs(study_dir))
      if (!r.lines.empty() && r.lines.back() == "start " + wid) trial = name;
    return !tag.empty() && !trial.empty();
  }, std::chrono::seconds(60));
}

/// Every worker's log (the wrapper's and `dlsweep worker`'s stderr), one after another.
std::string worker_logs(const fs::path& pool) {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(pool / "w", ec))
    if (e.is_directory(ec)) out += "== " + e.path().filename().string() + "\n" + read_file(e.path() / "stderr.log");
  return out;
}

/// Sets the cluster's Epilog and reloads it (as LocalCluster::set_prolog does the Prolog).
void set_epilog(const LocalCluster& cluster, const std::string& epilog) {
  std::istringstream in(read_file(cluster.conf));
  std::string kept;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Epilog=", 0) != 0) kept += line + "\n";
  kept += "Epilog=" + epilog + "\n";
  write_file(cluster.conf, kept);
  cluster.run({"scontrol", "reconfigure"});
}

}  // namespace

TEST_CASE("slurm workers: 12 trials on 3 workers under a site limit of 4 jobs: each trial once, 3 jobs in Slurm",
          "[slurm][workers]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers");
  fs::create_directories(dir / "bin");
  write_script(dir / "bin" / "sbatch", limit_wrapper(dir, 4));
  PathFirst path(dir / "bin");
  std::ofstream(dir / "study.yaml") << workers_study("e2e-workers", cluster.conf, 3, 12, 0.5);
  auto db = dir / "sweep.db";
  {
    // The dry run shows the worker allocations, not twelve jobs.
    auto dry = run_dlsweep(db, {"submit", "--dry-run", "study.yaml"}, dir);
    INFO(dry.out << dry.err);
    CHECK(dry.exit_code == 0);
    CHECK((dry.out + dry.err).find("pilot workers: 3 allocation(s) of 1 task(s) each run the study's 12 trial(s)") !=
          std::string::npos);
    CHECK((dry.out + dry.err).find("--array=0-2") != std::string::npos);
  }
  pid_t pid = start_submit(dir, db);
  const int rc = wait_exit(pid);
  const auto exited_at = fs::file_time_type::clock::now();
  INFO(err_of(dir));
  REQUIRE(rc == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,12\n");
  // Each task is named after its trial's number, as its directory is, not the database's id.
  {
    const auto launched = run_dlsweep(db, {"query", "SELECT reason FROM events WHERE reason LIKE 'submitted to %' "
                                                    "ORDER BY reason", "--format", "csv"}, dir).out;
    INFO(launched);
    CHECK(launched.find("submitted to slurm as pool:trial-0011-a0\n") != std::string::npos);
    CHECK(launched.find("pool:t0") == std::string::npos);
  }
  {
    // Finished soon after its last trial: the engine tells the pool no more work will come,
    // which writes `stop` and stops following the workers (it took 14-31 s, then 2.7 s behind a
    // 2 s timer). The bound leaves room for a loaded machine; the 2 s goal is the issue's.
    auto last_end = fs::file_time_type::min();
    for (const auto& e : fs::directory_iterator(dir / "dlsweep-runs" / "e2e-workers"))
      if (fs::exists(e.path() / "metrics.jsonl")) last_end = std::max(last_end, fs::last_write_time(e.path() / "metrics.jsonl"));
    const double behind = std::chrono::duration<double>(exited_at - last_end).count();
    INFO("the orchestrator exited " << behind << " s after the last trial's end");
    CHECK(behind < 5.0);
  }
  auto runs = trial_runs(dir / "dlsweep-runs" / "e2e-workers");
  REQUIRE(runs.size() == 12);
  std::set<std::string> used;
  for (const auto& [name, r] : runs) {
    INFO(name);
    CHECK(r.starts == 1);
    CHECK(r.ends == 1);
    CHECK(r.finals == 1);
    used.insert(r.workers.begin(), r.workers.end());
  }
  // Three allocations ran all twelve (each worker several trials), and sbatch was asked for
  // no more than those: one array of 3, never more than 4 jobs in Slurm, nothing refused.
  // (Which worker took which trial is the race for the queue: all three usually have some.)
  for (const auto& w : used) CHECK((w == "w1" || w == "w2" || w == "w3"));
  std::set<std::string> allocations;
  for (const auto& e : fs::directory_iterator(dir / "dlsweep-runs" / "e2e-workers" / "slurm" / "pool" / "w"))
    allocations.insert(e.path().filename().string());
  CHECK(allocations == std::set<std::string>{"w1", "w2", "w3"});
  auto accepted = lines_of(dir / "accepted.log");
  CHECK(accepted.size() == 1);
  for (const auto& total : accepted) CHECK(std::stoi(total) <= 4);
  CHECK(lines_of(dir / "refused.log").empty());
  // Finished: the workers were told there is nothing more (no allocation idles on).
  CHECK(test_support::wait_until([&] { return live_worker_jobs(cluster, "e2e-workers") == 0; },
                                 std::chrono::seconds(30)));
}

TEST_CASE("slurm workers: kill -9 of a worker mid-trial: the trial goes back to the queue and another worker "
          "finishes it; it never runs twice at once",
          "[slurm][workers][kill]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers-kill");
  std::ofstream(dir / "study.yaml") << workers_study("e2e-workers-kill", cluster.conf, 2, 4, 4);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  // Worker w1 has started a trial: kill the worker process (not its allocation's script).
  const fs::path pool = dir / "dlsweep-runs" / "e2e-workers-kill" / "slurm" / "pool";
  std::string victim;
  REQUIRE(w1_trial_running(pool, dir / "dlsweep-runs" / "e2e-workers-kill", victim));
  auto pk = dlsweep::sched::slurm::run_command(
      {"pkill", "-9", "-f", "^" + std::string(DLSWEEP_BIN) + " worker --pool " + pool.string() + " --id w1 "}, {}, 10);
  REQUIRE(pk);
  CHECK(pk->exit_code == 0);
  const int rc = wait_exit(pid);
  const std::string err = err_of(dir);
  INFO(err);
  REQUIRE(rc == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,4\n");
  CHECK(err.find("requeued: worker w1 ended") != std::string::npos);
  auto runs = trial_runs(dir / "dlsweep-runs" / "e2e-workers-kill");
  REQUIRE(runs.size() == 4);
  std::size_t restarted = 0;
  for (const auto& [name, r] : runs) {
    INFO(name << " " << r.overlap_log);
    CHECK_FALSE(r.overlap);  // the killed worker's run was stopped before the next began
    CHECK(r.ends == 1);      // ... and never finished behind the new one's back
    CHECK(r.finals == 1);
    if (r.starts == 2) {
      ++restarted;
      CHECK(r.workers.count("w1") == 1);
      CHECK(r.workers.size() == 2);
    } else {
      CHECK(r.starts == 1);
    }
  }
  CHECK(restarted == 1);
  // The wrapper said what it stopped.
  CHECK(read_file(pool / "w" / "w1" / "stderr.log").find("stopping process group") != std::string::npos);
}

TEST_CASE("slurm workers: kill -9 of a worker and its wrapper together mid-trial: the trial's processes outlive "
          "the allocation (proctrack/linuxproc loses them); its rerun waits until they are gone",
          "[slurm][workers][kill]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers-kill-both");
  // Trials long enough that the replacement worker claims the rerun while the orphaned run
  // still sleeps.
  std::ofstream(dir / "study.yaml") << workers_study("e2e-workers-kill-both", cluster.conf, 2, 3, 8);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  const fs::path pool = dir / "dlsweep-runs" / "e2e-workers-kill-both" / "slurm" / "pool";
  std::string victim;
  REQUIRE(w1_trial_running(pool, dir / "dlsweep-runs" / "e2e-workers-kill-both", victim));
  // One pkill for both (the wrapper first, in pid order): the wrapper never gets to stop the
  // trial's process group, and Slurm's linuxproc tracking has lost the trial once its parent died.
  const std::string w1 = (pool / "w" / "w1").string();
  auto pk = dlsweep::sched::slurm::run_command(
      {"pkill", "-9", "-f",
       "^/bin/bash " + pool.string() + "/worker.sh " + w1 + " |^" + std::string(DLSWEEP_BIN) + " worker --pool " +
           pool.string() + " --id w1 "},
      {}, 10);
  REQUIRE(pk);
  CHECK(pk->exit_code == 0);
  const int rc = wait_exit(pid);
  const std::string err = err_of(dir);
  INFO(err);
  REQUIRE(rc == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,3\n");
  auto runs = trial_runs(dir / "dlsweep-runs" / "e2e-workers-kill-both");
  REQUIRE(runs.size() == 3);
  std::size_t restarted = 0;
  for (const auto& [name, r] : runs) {
    INFO(name << " " << r.overlap_log);
    CHECK_FALSE(r.overlap);
    CHECK(r.finals == r.ends);
    if (r.starts == 2) {
      ++restarted;
      CHECK(r.lines.front() == "start w1");
      // The orphaned run went on to its end (nothing stopped it), and only then did the rerun begin.
      if (r.ends == 2) CHECK(r.lines == std::vector<std::string>{"start w1", "end", r.lines[2], "end"});
    } else {
      CHECK(r.starts == 1);
      CHECK(r.ends == 1);
    }
  }
  CHECK(restarted == 1);
  // The rerun knew of the earlier run (its task named it) and checked it before it started.
  std::string worker_logs;
  for (const auto& e : fs::directory_iterator(pool / "w"))
    worker_logs += read_file(e.path() / "stderr.log");
  CHECK_THAT(worker_logs, Catch::Contains(victim + ": ran before without an end"));
}

TEST_CASE("slurm workers: kill -9 of the orchestrator, then resume follows the live workers; nothing lost or run "
          "twice",
          "[slurm][workers][resume]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers-resume");
  std::ofstream(dir / "study.yaml") << workers_study("e2e-workers-resume", cluster.conf, 2, 6, 3);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  const fs::path study_dir = dir / "dlsweep-runs" / "e2e-workers-resume";
  // Both workers are running a trial: kill the orchestrator outright.
  REQUIRE(test_support::wait_until([&] {
    auto r = trial_runs(study_dir);
    std::size_t started = 0;
    for (auto& [n, t] : r) started += t.starts;
    return started >= 2;
  }, std::chrono::seconds(60)));
  ::kill(pid, SIGKILL);
  wait_exit(pid);
  REQUIRE(live_worker_jobs(cluster, "e2e-workers-resume") == 2);  // they run on without it
  auto res = run_dlsweep(db, {"resume", "e2e-workers-resume"}, dir);
  INFO(res.out << res.err);
  REQUIRE(res.exit_code == 0);
  CHECK((res.out + res.err).find(" followed on slurm") != std::string::npos);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,6\n");
  auto runs = trial_runs(study_dir);
  REQUIRE(runs.size() == 6);
  std::set<std::string> used;
  for (const auto& [name, r] : runs) {
    INFO(name);
    CHECK(r.starts == 1);  // nothing ran again: the trials in flight were followed, not relaunched
    CHECK(r.ends == 1);
    CHECK(r.finals == 1);
    used.insert(r.workers.begin(), r.workers.end());
  }
  // The resumed orchestrator used the two allocations it found: it started no new worker.
  CHECK(used == std::set<std::string>{"w1", "w2"});
}

TEST_CASE("slurm workers: kill -9 of the orchestrator, then one worker's allocation COMPLETING and one REQUEUED; "
          "resume runs every trial to one end, never twice at once",
          "[slurm][workers][resume]") {
  // The states a site produces under a pool whose orchestrator died (issue 38): a worker
  // scancelled while its node's Epilog still runs (COMPLETING for as long as the Epilog
  // takes: a site's health check, a slow cleanup), and a worker requeued by the site (a
  // preemption, an admin). Workers are submitted --no-requeue, and Slurm refuses
  // `scontrol requeue` of those ("Requested operation is presently disabled"; a failing
  // Prolog does not requeue them either: they end CANCELLED); only an admin's
  // `scontrol update jobid=J requeue=1` first makes one requeueable. Slurm 22.05 never
  // shows "REQUEUED" in squeue or scontrol: the requeued job is COMPLETING (its Epilog),
  // then PENDING (BeginTime, Restarts=1), then RUNNING again, the same batch script from
  // the start: the same `dlsweep worker --id wN`, whose directory still holds the trial it
  // was running. `resume` runs while both states hold.
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers-states");
  // The Epilog holds a job in COMPLETING while its SLURM_JOB_ID is listed in `hold` (at
  // most two minutes: a test that dies leaves no job stuck for long).
  const fs::path hold = dir / "hold";
  write_script(dir / "epilog.sh", fmt::format(R"(#!/bin/sh
i=0
while grep -qx "$SLURM_JOB_ID" '{}' 2>/dev/null && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done
exit 0
)", hold.string()));
  set_epilog(cluster, (dir / "epilog.sh").string());
  const std::string study = "e2e-workers-states";
  std::ofstream(dir / "study.yaml") << workers_study(study, cluster.conf, 2, 6, 8);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  const fs::path study_dir = dir / "dlsweep-runs" / study;
  const fs::path pool = study_dir / "slurm" / "pool";
  std::string tag1, trial1, tag2, trial2;
  REQUIRE(worker_busy(pool, study_dir, "w1", tag1, trial1));
  REQUIRE(worker_busy(pool, study_dir, "w2", tag2, trial2));
  ::kill(pid, SIGKILL);
  wait_exit(pid);
  auto job1 = worker_job(pool, "w1");
  auto job2 = worker_job(pool, "w2");
  REQUIRE(job1);
  REQUIRE(job2);
  write_file(hold, job1->raw + "\n" + job2->raw + "\n");
  // w1 (the orchestrator is gone; the workers went on), once it has begun a run less than
  // 3 s ago (of 8 s: still running when the test interrupts it): scancel; its Epilog holds
  // it COMPLETING.
  REQUIRE(worker_busy(pool, study_dir, "w1", tag1, trial1, 3));
  auto sc = cluster.run({"scancel", job1->native});
  REQUIRE(sc.exit_code == 0);
  // w2, likewise: made requeueable by the admin, then requeued: COMPLETING (its Epilog),
  // then, let go, PENDING until it may start again.
  REQUIRE(worker_busy(pool, study_dir, "w2", tag2, trial2, 3));
  INFO("w1: Slurm job " << job1->native << " (" << job1->raw << ") ran " << tag1 << " in " << trial1
                         << "; w2: Slurm job " << job2->native << " (" << job2->raw << ") ran " << tag2 << " in "
                         << trial2);
  auto refused = cluster.run({"scontrol", "requeue", job2->native});
  CHECK(refused.exit_code != 0);  // --no-requeue, as dlsweep submits workers
  CHECK(refused.err.find("presently disabled") != std::string::npos);
  REQUIRE(cluster.run({"scontrol", "update", "jobid=" + job2->native, "requeue=1"}).exit_code == 0);
  auto rq = cluster.run({"scontrol", "requeue", job2->native});
  INFO(rq.err);
  REQUIRE(rq.exit_code == 0);
  REQUIRE(test_support::wait_until([&] {
    auto s1 = job_seen(cluster, job1->native), s2 = job_seen(cluster, job2->native);
    return s1.state == "COMPLETING" && s2.state == "COMPLETING" && s2.restarts == 1;
  }, std::chrono::seconds(30), std::chrono::milliseconds(100)));
  write_file(hold, job1->raw + "\n");
  JobSeen before1, before2;
  REQUIRE(test_support::wait_until([&] {
    before1 = job_seen(cluster, job1->native);
    before2 = job_seen(cluster, job2->native);
    return before2.state == "PENDING";
  }, std::chrono::seconds(30), std::chrono::milliseconds(100)));
  // The states `resume` meets: w1 being torn down, w2 requeued and waiting to start again.
  CHECK(before1.state == "COMPLETING");
  CHECK(before2.restarts == 1);
  CHECK(before2.reason == "BeginTime");
  const auto t0 = std::chrono::steady_clock::now();
  const int res = spawn_dlsweep(dir, db, {"resume", study}, dir / "resume.err");
  REQUIRE(res > 0);
  // Once it has taken stock (and follows both workers), w1's Epilog ends.
  const bool listed = test_support::wait_until(
      [&] { return read_file(dir / "resume.err").find(" followed on slurm") != std::string::npos; },
      std::chrono::seconds(60), std::chrono::milliseconds(100));
  const JobSeen listed1 = job_seen(cluster, job1->native);
  fs::remove(hold);
  int status = -1;
  const bool ended = test_support::wait_until([&] { return ::waitpid(res, &status, WNOHANG) == res; },
                                              std::chrono::seconds(300), std::chrono::milliseconds(100));
  if (!ended) {
    ::kill(res, SIGKILL);
    ::waitpid(res, &status, 0);
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string err = read_file(dir / "resume.err");
  const std::string logs = worker_logs(pool);
  INFO("resume took " << took << " s\n" << err << "\n" << logs);
  CHECK(listed);
  CHECK(listed1.state == "COMPLETING");  // still held when resume listed it
  REQUIRE(ended);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,6\n");
  auto runs = trial_runs(study_dir);
  REQUIRE(runs.size() == 6);
  for (const auto& [name, r] : runs) {
    INFO(name << ": " << r.overlap_log);
    CHECK_FALSE(r.overlap);  // no run began while an earlier one of its trial still ran
    CHECK(r.ends == 1);      // one end, written by the last run
    CHECK(r.finals == 1);    // one final record
    if (name == trial1 || name == trial2) {
      CHECK(r.starts == 2);  // interrupted, then run again (once)
      CHECK(r.lines.back() == "end");
    } else {
      CHECK(r.starts == 1);
    }
  }
  // Each rerun knew of the interrupted run and checked that it was gone before it started.
  CHECK_THAT(logs, Catch::Contains(tag1 + ": ran before without an end"));
  CHECK_THAT(logs, Catch::Contains(tag2 + ": ran before without an end"));
  // The requeued worker's trial did not wait for a worker to give up idling (120 s) before
  // it ran again.
  CHECK(logs.find("idle for") == std::string::npos);
  CHECK(took < 100);
  // The study's end told the workers: none is left in Slurm.
  CHECK(test_support::wait_until([&] { return live_worker_jobs(cluster, study) == 0; }, std::chrono::seconds(30)));
}

TEST_CASE("slurm workers: SIGTERM ends the orchestrator within seconds: running and waiting trials CANCELLED, "
          "the workers stop their trials and exit",
          "[slurm][workers][signal]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers-term");
  std::ofstream(dir / "study.yaml") << workers_study("e2e-workers-term", cluster.conf, 2, 6, 300);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  const fs::path study_dir = dir / "dlsweep-runs" / "e2e-workers-term";
  REQUIRE(test_support::wait_until([&] {
    std::size_t started = 0;
    for (auto& [n, t] : trial_runs(study_dir)) started += t.starts;
    return started >= 2;
  }, std::chrono::seconds(60)));
  auto [code, took] = terminate(pid);
  INFO(err_of(dir));
  CHECK(code == 130);
  CHECK(took < 15);
  const std::string s = states(db, dir);
  CHECK(s.find("RUNNING") == std::string::npos);
  CHECK(s.find("QUEUED") == std::string::npos);
  CHECK(s.find("CANCELLED") != std::string::npos);
  // Nothing is left behind: the workers stopped their trials (their pids) and their allocations ended.
  CHECK(test_support::wait_until([&] { return live_worker_jobs(cluster, "e2e-workers-term") == 0; },
                                 std::chrono::seconds(30)));
  for (const auto& e : fs::directory_iterator(study_dir)) {
    if (e.path().filename().string().rfind("trial-", 0) != 0) continue;
    for (const auto& p : lines_of(e.path() / "pids.log")) CHECK_FALSE(test_support::process_running(std::stoi(p)));
  }
}

TEST_CASE("slurm workers: keep_imported: the Optuna-style runner stays imported between trials (off: a fresh "
          "Python per trial)",
          "[slurm][workers][python]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-workers-python");
  // Module state says whether the module stayed imported: CALLS counts the calls it has seen.
  std::ofstream(dir / "obj.py") << R"PY(
import os
import dlsweep_trial as dt
CALLS = 0

def objective(trial):
    global CALLS
    CALLS += 1
    trial.set_user_attr("pid", os.getpid())
    return float(CALLS) + 0.0 * dt.params()["x"]
)PY";
  auto study = [&](const std::string& name, bool keep) {
    return fmt::format(R"(
name: {name}
backend: {{kind: slurm, workers: 1, keep_imported: {keep}, slurm_conf: '{conf}', poll_min_s: 0.3, poll_max_s: 1, time: 10}}
trial:
  command: [python3, -m, dlsweep_optuna, "{{study_dir}}/obj.py:objective", --metric, acc]
  env: {{PYTHONPATH: '{py}'}}
objective: {{metric: acc, mode: max, rank_by: final}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3]}}
)",
                       fmt::arg("name", name), fmt::arg("keep", keep ? "true" : "false"), fmt::arg("conf", cluster.conf),
                       fmt::arg("py", (fs::path(DLSWEEP_SOURCE_DIR) / "python").string()));
  };
  std::ofstream(dir / "warm.yaml") << study("e2e-py-warm", true);
  std::ofstream(dir / "cold.yaml") << study("e2e-py-cold", false);
  auto db = dir / "sweep.db";
  for (const char* f : {"warm.yaml", "cold.yaml"}) {
    auto r = run_dlsweep(db, {"submit", f}, dir);
    INFO(f << ": " << r.err);
    REQUIRE(r.exit_code == 0);
  }
  auto pids = [&](const std::string& name) {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir / "dlsweep-runs" / name))
      if (e.path().filename().string().rfind("trial-", 0) == 0) out.insert(read_file(e.path() / "user_attrs.json"));
    return out;
  };
  auto warm = run_dlsweep(db, {"results", "e2e-py-warm", "--format", "json"}, dir).out;
  auto cold = run_dlsweep(db, {"results", "e2e-py-cold", "--format", "json"}, dir).out;
  INFO(warm << "\n" << cold);
  // Kept imported: one process ran the three trials, its counter went 1, 2, 3; afresh: 1 each time.
  CHECK(pids("e2e-py-warm").size() == 1);
  CHECK(pids("e2e-py-cold").size() == 3);
  std::multiset<double> wv, cv;
  for (const auto& t : nlohmann::json::parse(warm)) wv.insert(t["value"].get<double>());
  for (const auto& t : nlohmann::json::parse(cold)) cv.insert(t["value"].get<double>());
  CHECK(wv == std::multiset<double>{1, 2, 3});
  CHECK(cv == std::multiset<double>{1, 1, 1});
}
