// The site's rules on the real local Slurm cluster (issue "The site's rules"): a site that
// allows 4 jobs per user, played by an `sbatch` first on PATH that refuses in Slurm's own
// words (QOSMaxSubmitJobPerUserLimit) when a submission would leave more than 4 of the
// user's jobs pending or running; and a signal that always ends the orchestrator within a
// few seconds, whatever it waits on (sbatch retries against a controller that does not
// answer, a hung squeue).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "../support/process_state.hpp"
#include "run_command.hpp"
#include "slurm_site.hpp"

using namespace slurm_test;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace slurm_site;

namespace {

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

bool controller_empty(const LocalCluster& cluster) {
  return test_support::wait_until([&] {
    auto sq = cluster.run({"squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING"});
    return sq.out.find_first_not_of(" \n") == std::string::npos;
  }, std::chrono::seconds(30), std::chrono::milliseconds(200));
}

}  // namespace

TEST_CASE("slurm limits: under a site limit of 4 jobs per user, 10 trials all run, never more than 4 in Slurm",
          "[slurm][limits]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-limits");
  fs::create_directories(dir / "bin");
  write_script(dir / "bin" / "sbatch", limit_wrapper(dir, 4));
  PathFirst path(dir / "bin");
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: e2e-limits
backend: {{kind: slurm, max_concurrent: 10, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sh, -c, "sleep 3; echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}
)", cluster.conf);
  auto db = dir / "sweep.db";
  {
    // Where the site's accounting states the limit (sacctmgr answers), the dry run says what
    // submit will do: arrays of at most 4, the rest waiting.
    fs::create_directories(dir / "acct");
    write_script(dir / "acct" / "sacctmgr", R"SH(#!/bin/bash
case "$*" in *"show qos"*) echo "4||";; *"show assoc"*) echo "|";; esac
)SH");
    PathFirst acct(dir / "acct");
    auto dry = run_dlsweep(db, {"submit", "--dry-run", "study.yaml"}, dir);
    INFO(dry.out << dry.err);
    CHECK(dry.exit_code == 0);
    const std::string said = dry.out + dry.err;
    CHECK(said.find("site limit (sacctmgr): the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit): this "
                    "study's 10 jobs go at most 4 at a time") != std::string::npos);
    CHECK(said.find("--array=0-3") != std::string::npos);
    CHECK(said.find("--array=0-9") == std::string::npos);
    CHECK_FALSE(fs::exists(db));
  }
  pid_t pid = start_submit(dir, db);
  // While it runs, `dlsweep status` says what the limit holds back (trials take 3 s: the
  // study runs for three rounds at least after the limit is learned).
  REQUIRE(test_support::wait_until([&] {
    return run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events WHERE kind = 'site_limit'", "--format", "csv"}, dir)
               .out == "COUNT(*)\n1\n";
  }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  auto st = run_dlsweep(db, {"status", "e2e-limits"}, dir);
  CHECK(st.out.find("site limit: e2e-limits: the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit): ") !=
        std::string::npos);
  CHECK(st.out.find(" waiting\n") != std::string::npos);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  {
    std::ifstream err_in(dir / "err.txt");
    r.err.assign(std::istreambuf_iterator<char>(err_in), {});
  }
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,10\n");
  CHECK(run_dlsweep(db, {"status"}, dir).out.find("site limit") == std::string::npos);  // finished: no news
  // The site refused, dlsweep adapted: it never had more than 4 jobs in Slurm.
  CHECK_FALSE(lines_of(dir / "refused.log").empty());
  for (const auto& total : lines_of(dir / "accepted.log")) CHECK(std::stoi(total) <= 4);
  // Said once, in the site's words, with no controller-is-down advice.
  CHECK(count_of(r.err, "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit)") == 1);
  CHECK(r.err.find("scontrol ping") == std::string::npos);
  CHECK(r.err.find("lost") == std::string::npos);
  // A trial was QUEUED only once sbatch had accepted its job: replaying the recorded
  // transitions, never more than 4 trials were QUEUED or RUNNING at once.
  auto ev = run_dlsweep(db, {"query", "SELECT trial_id, to_state FROM events WHERE kind = 'transition' ORDER BY id",
                             "--format", "csv"}, dir);
  std::map<std::string, std::string> state;
  std::size_t most = 0;
  std::istringstream in(ev.out);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    auto comma = line.find(',');
    state[line.substr(0, comma)] = line.substr(comma + 1);
    std::size_t live = 0;
    for (auto& [t, s] : state) live += s == "QUEUED" || s == "RUNNING";
    most = std::max(most, live);
  }
  CHECK(most <= 4);
  CHECK(most >= 1);
  // The limit is in the database for `status` and serve.
  auto sl = run_dlsweep(db, {"query", "SELECT reason FROM events WHERE kind = 'site_limit'", "--format", "csv"}, dir);
  CHECK(sl.out == "reason\nthe site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit)\n");
}

TEST_CASE("slurm limits: SIGTERM while sbatch is retried ends the orchestrator within seconds; nothing is half-done",
          "[slurm][limits][signal]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-sigterm-retry");
  fs::create_directories(dir / "bin");
  // The preflight (`--test-only`) passes; every real submission meets a controller that
  // does not answer: dlsweep retries with back-off (up to backend.submit_give_up_s).
  write_script(dir / "bin" / "sbatch", fmt::format(R"SH(#!/bin/bash
for a in "$@"; do [ "$a" = --test-only ] && exec /usr/bin/sbatch "$@"; done
date +%s.%N >> '{}/tries.log'
echo "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" >&2
exit 1
)SH", dir.string()));
  PathFirst path(dir / "bin");
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: e2e-sigterm-retry
backend: {{kind: slurm, max_concurrent: 4, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 30}}
trial:
  command: [/bin/sleep, "60"]
objective: {{metric: loss, mode: min}}
space: {{x: [1, 2, 3, 4, 5, 6]}}
)", cluster.conf);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  REQUIRE(wait_for(dir / "tries.log"));
  REQUIRE(test_support::wait_until([&] { return lines_of(dir / "tries.log").size() >= 2; },
                                   std::chrono::seconds(60)));  // it is in its back-off now
  auto [code, took] = terminate(pid);
  std::ifstream err_in(dir / "err.txt");
  std::string err((std::istreambuf_iterator<char>(err_in)), {});
  INFO(err);
  CHECK(code == 130);
  CHECK(took < 10);  // before: minutes, until SIGKILL
  // Nothing was ever accepted: no trial is QUEUED or RUNNING; each ended CANCELLED.
  auto s = states(db, dir);
  CHECK(s.find("QUEUED") == std::string::npos);
  CHECK(s.find("RUNNING") == std::string::npos);
  CHECK(s.find("CANCELLED") != std::string::npos);
  // The study resumes cleanly with a controller that answers.
  fs::remove(dir / "bin" / "sbatch");
  auto st = run_dlsweep(db, {"status", "e2e-sigterm-retry"}, dir);
  CHECK(st.exit_code == 0);
}

TEST_CASE("slurm limits: SIGTERM while squeue hangs ends the orchestrator within seconds and cancels the jobs",
          "[slurm][limits][signal]") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-sigterm-squeue");
  fs::create_directories(dir / "bin");
  // squeue hangs (for 10 minutes) once hang.flag exists: a controller that stopped answering.
  write_script(dir / "bin" / "squeue", fmt::format(R"(#!/bin/bash
if [ -e '{0}/hang.flag' ]; then touch '{0}/hanging'; exec sleep 600; fi
exec /usr/bin/squeue "$@"
)", dir.string()));
  PathFirst path(dir / "bin");
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: e2e-sigterm-squeue
backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sleep, "120"]
objective: {{metric: loss, mode: min}}
space: {{x: [1, 2]}}
)", cluster.conf);
  auto db = dir / "sweep.db";
  pid_t pid = start_submit(dir, db);
  REQUIRE(test_support::wait_until([&] {
    return run_dlsweep(db, {"query", "SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'", "--format", "csv"}, dir).out ==
           "COUNT(*)\n2\n";
  }, std::chrono::seconds(60)));
  std::ofstream(dir / "hang.flag") << "";
  REQUIRE(wait_for(dir / "hanging"));  // the orchestrator's squeue is hung now
  auto [code, took] = terminate(pid);
  std::ifstream err_in(dir / "err.txt");
  std::string err((std::istreambuf_iterator<char>(err_in)), {});
  INFO(err);
  CHECK(code == 130);
  CHECK(took < 15);  // before: until the command's 60 s timeout, and then more waiting
  CHECK(states(db, dir) == "state,COUNT(*)\nCANCELLED,2\n");
  fs::remove(dir / "hang.flag");
  CHECK(controller_empty(cluster));  // the last scancel went out on the way out
}

TEST_CASE("slurm limits: --as-job on a site that refuses every trial: scancel of the orchestrator's job ends it "
          "within 5 s, detached, its trials resumable",
          "[slurm][limits][signal][as-job]") {
  // Issue 38 item 5 under --as-job: the orchestrator runs as a Slurm job; the site refuses
  // each of its trials' submissions for a submit limit (QOSMaxSubmitJobPerUserLimit), so it
  // sits with the site-limit probe's timer pending (two minutes on). The user cancels its
  // job: Slurm sends TERM to the job's processes and SIGKILL after KillWait (5 s here, 30 s
  // by default). The orchestrator must leave on the TERM, before the KILL: the clean end of
  // --detach-on-term (what its job runs with): "detaching", exit 75, the study RUNNING and
  // its trials WAITING, for `resume`. `scancel --full --signal=TERM` (a signal, not a
  // cancel) ends it the same way, and the job's exit code is the orchestrator's 75.
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  const std::string how = GENERATE(as<std::string>{}, "scancel", "signal");
  INFO(how);
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("slurm-as-job-refused-" + how);
  fs::create_directories(dir / "bin");
  // The orchestrator's own job goes through; every other submission is refused in Slurm's
  // words (each refusal logged). `sbatch --test-only` (the preflights) passes through. The
  // orchestrator's job inherits PATH (sbatch's default --export=ALL): its sbatch is this one.
  write_script(dir / "bin" / "sbatch", fmt::format(R"SH(#!/bin/bash
for a in "$@"; do [ "$a" = --test-only ] && exec /usr/bin/sbatch "$@"; script="$a"; done
if grep -q '^#SBATCH --job-name=dlsweep:.*\.orchestrator$' "$script"; then exec /usr/bin/sbatch "$@"; fi
date +%s.%N >> '{}/refused.log'
echo "sbatch: error: QOSMaxSubmitJobPerUserLimit" >&2
echo "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)" >&2
exit 1
)SH", dir.string()));
  PathFirst path(dir / "bin");
  const std::string name = "e2e-as-job-refused-" + how;
  std::ofstream(dir / "study.yaml") << fmt::format(R"(
name: {}
backend: {{kind: slurm, max_concurrent: 4, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sh, -c, "echo '{{\"seq\":0,\"kind\":\"final\",\"metrics\":{{\"loss\":1}}}}' >> metrics.jsonl"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3, 4]}}
)", name, cluster.conf);
  auto db = dir / "sweep.db";
  auto sub = run_dlsweep(db, {"submit", "--as-job", "study.yaml"}, dir);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  const std::string job = sub.out.substr(0, sub.out.find('\n'));
  const fs::path log = dir / "dlsweep-runs" / (name + ".orchestrator") / "stderr.log";
  // The site's limit is learned (recorded): nothing can go out, the probe's timer is pending.
  REQUIRE(test_support::wait_until([&] {
    return fs::exists(db) &&
           run_dlsweep(db, {"query", "SELECT COUNT(*) FROM events WHERE kind = 'site_limit'", "--format", "csv"}, dir)
                   .out == "COUNT(*)\n1\n";
  }, std::chrono::seconds(90), std::chrono::milliseconds(100)));
  REQUIRE(lines_of(dir / "refused.log").size() >= 1);
  // The orchestrator's process, in its job.
  pid_t orch = 0;
  REQUIRE(test_support::wait_until([&] {
    auto pg = run_command({"pgrep", "-f", "^" + std::string(DLSWEEP_BIN) + " --db " + fs::absolute(db).string() +
                                              " submit --detach-on-term "});
    orch = pg.exit_code == 0 ? static_cast<pid_t>(std::atol(pg.out.c_str())) : 0;
    return orch > 0;
  }, std::chrono::seconds(10), std::chrono::milliseconds(100)));
  const std::size_t refusals = lines_of(dir / "refused.log").size();
  const auto t0 = Clock::now();
  auto sc = how == "scancel" ? cluster.run({"scancel", job}) : cluster.run({"scancel", "--full", "--signal=TERM", job});
  REQUIRE(sc.exit_code == 0);
  const bool gone = test_support::wait_until([&] { return !test_support::process_running(orch); },
                                             std::chrono::seconds(60), std::chrono::milliseconds(10));
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  // The job ends with it.
  std::string job_state;
  CHECK(test_support::wait_until([&] {
    auto r = cluster.run({"scontrol", "-o", "show", "job", job});
    job_state = r.out;
    return r.out.find("JobState=COMPLETING") == std::string::npos && r.out.find("JobState=RUNNING") == std::string::npos;
  }, std::chrono::seconds(30), std::chrono::milliseconds(100)));
  const std::string text = read_file(log);
  INFO("the orchestrator exited " << took << " s after the signal\n" << text << "\n" << job_state);
  REQUIRE(gone);
  CHECK(took < 5);  // before Slurm's KillWait ran out: it left, it was not killed
  // Its own clean end: the detach, said and recorded.
  // None of its trials has a job (the site refused them all): it says so, not "4 live trials
  // keep running"; the database has them WAITING, below.
  CHECK(text.find("SIGTERM: detaching; no trial has a job on Slurm: 4 not yet submitted (held back for a limit) "
                  "stay WAITING") != std::string::npos);
  CHECK(text.find("study " + name + " detached: its trials run on") != std::string::npos);
  if (how == "signal") CHECK(job_state.find("ExitCode=75:0") != std::string::npos);
  // No sbatch after the signal.
  CHECK(lines_of(dir / "refused.log").size() == refusals);
  // Nothing half-done: the study is still RUNNING (detached), every trial WAITING (none
  // ever had a job), the database whole.
  CHECK(run_dlsweep(db, {"query", "SELECT state FROM studies", "--format", "csv"}, dir).out == "state\nRUNNING\n");
  CHECK(states(db, dir) == "state,COUNT(*)\nWAITING,4\n");
  CHECK(run_dlsweep(db, {"query", "PRAGMA integrity_check", "--format", "csv"}, dir).out.find("ok") !=
        std::string::npos);
  CHECK(run_dlsweep(db, {"status", name}, dir).exit_code == 0);
  // The site takes jobs again: `resume` runs every trial, each once.
  fs::remove(dir / "bin" / "sbatch");
  auto res = run_dlsweep(db, {"resume", name}, dir);
  INFO(res.err);
  CHECK(res.exit_code == 0);
  CHECK(states(db, dir) == "state,COUNT(*)\nCOMPLETE,4\n");
  CHECK(run_dlsweep(db, {"query", "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM jobs GROUP BY trial_id)",
                         "--format", "csv"}, dir)
            .out == "MAX(n)\n1\n");
}
