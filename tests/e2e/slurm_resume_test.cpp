// `dlsweep resume` of a Slurm study whose orchestrator was SIGKILLed, against a real
// controller started by scripts/slurm-local.sh. Slurm jobs outlive the orchestrator, so
// resume must follow them (no second submission of a running or pending trial), cancel the
// study's jobs that belong to no live trial, and take the end of jobs that finished unseen
// from the controller's record (the fallback for a job nobody can account for, requeue, is
// tested in tests/engine/engine_resume_test.cpp).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "../schedulers/slurm/slurm_test_support.hpp"
#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

using namespace slurm_test;
namespace fs = std::filesystem;

namespace {

// Each trial appends one record per second for `seconds` s, continuing seq after what the
// file already holds (the protocol's rule for a relaunch of the same attempt).
std::string slow_study(const std::string& name, const std::string& conf, int seconds) {
  return fmt::format(R"(
name: {}
backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command:
    - /bin/sh
    - -c
    - |
      n=$(cat metrics.jsonl 2>/dev/null | wc -l)
      for i in $(seq 1 {}); do
        sleep 1
        echo "{{\"seq\":$n,\"kind\":\"eval\",\"step\":$i,\"metrics\":{{\"loss\":$i}}}}" >> metrics.jsonl
        n=$((n+1))
      done
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3, 4]}}
)", name, conf, seconds);
}

std::string csv(const fs::path& db, const std::string& sql, const fs::path& dir) {
  return run_dlsweep(db, {"query", sql, "--format", "csv"}, dir).out;
}

/// Starts `dlsweep submit [extra] study.yaml` in `dir`, waits until two trials run, sends
/// `sig`. Returns the wait status, or -1 if the trials never ran.
int submit_and_signal(const fs::path& dir, const fs::path& db, int sig, const char* extra = nullptr) {
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::chdir(dir.c_str());
    std::freopen((dir / "submit.err").c_str(), "w", stderr);
    if (extra) ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", extra, "study.yaml", (char*)nullptr);
    else ::execl(DLSWEEP_BIN, DLSWEEP_BIN, "--db", db.c_str(), "submit", "study.yaml", (char*)nullptr);
    ::_exit(127);
  }
  const bool running = test_support::wait_until(
      [&] { return csv(db, "SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'", dir) == "COUNT(*)\n2\n"; });
  ::kill(pid, sig);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return running ? status : -1;
}

/// A study of four `seconds`-long trials on `cluster`, submitted and then killed.
struct KilledSweep {
  fs::path dir, db;
  KilledSweep(const LocalCluster& cluster, const std::string& study, int seconds)
      : dir(fresh_dir(study)), db(dir / "sweep.db") {
    write_file(dir / "study.yaml", slow_study(study, cluster.conf, seconds));
    REQUIRE(submit_and_signal(dir, db, SIGKILL) != -1);  // no goodbye: its jobs stay on the controller
  }
};

int study_jobs_on_controller(const LocalCluster& cluster, const std::string& study) {
  auto sq = cluster.run({"squeue", "-h", "-r", "-n", "dlsweep:" + study, "-o", "%i"});
  int n = 0;
  for (char c : sq.out) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("slurm: resume follows the jobs a killed orchestrator left and cancels strays") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  KilledSweep k(cluster, "e2e-slurm-resume", 8);
  const auto& [dir, db] = k;
  // All four went out as one array: two running, two held by the throttle — all alive.
  CHECK(study_jobs_on_controller(cluster, "e2e-slurm-resume") == 4);
  {
    // An orchestrator that died between recording a cancel and scancel leaves a job that
    // no live trial owns: trial 3 here.
    sqlite3* h = nullptr;
    REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "UPDATE trials SET state = 'CANCELLED' WHERE number = 3", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
    sqlite3_close(h);
  }
  auto r = run_dlsweep(db, {"resume", "e2e-slurm-resume"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("3 followed on slurm, 0 requeued") != std::string::npos);
  CHECK(r.err.find("1 stray job cancelled") != std::string::npos);
  CHECK(csv(db, "SELECT number, state, attempt FROM trials ORDER BY number", dir) ==
        "number,state,attempt\n0,COMPLETE,0\n1,COMPLETE,0\n2,COMPLETE,0\n3,CANCELLED,0\n");
  // No trial was submitted twice: one Slurm job id per trial, all tasks of one array.
  CHECK(csv(db, "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM jobs GROUP BY trial_id)", dir) ==
        "MAX(n)\n1\n");
  CHECK(csv(db, "SELECT COUNT(DISTINCT substr(job_id, 1, instr(job_id, '_'))) AS arrays FROM jobs", dir) ==
        "arrays\n1\n");
  // Every record of the followed trials is in, once: 8 per trial, seq 0..7.
  CHECK(csv(db, "SELECT COUNT(*), MAX(seq) FROM records r JOIN trials t ON t.id = r.trial_id WHERE t.number < 3 "
                "GROUP BY r.trial_id",
            dir) == "COUNT(*),MAX(seq)\n8,7\n8,7\n8,7\n");
  CHECK(csv(db, "SELECT COUNT(*) FROM events WHERE reason LIKE 'requeued%'", dir) == "COUNT(*)\n0\n");
  CHECK(csv(db, "SELECT state FROM studies", dir) == "state\nFINISHED\n");
  CHECK(test_support::wait_until([&] { return study_jobs_on_controller(cluster, "e2e-slurm-resume") == 0; },
                                 std::chrono::seconds(20), std::chrono::milliseconds(200)));
}

TEST_CASE("slurm: resume takes the end of jobs that finished while no orchestrator watched from the controller") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  KilledSweep k(cluster, "e2e-slurm-ended", 3);
  const auto& [dir, db] = k;
  // Trials 0 and 1 finish while nobody watches; the throttle then starts 2 and 3.
  auto runs = dir / "dlsweep-runs" / "e2e-slurm-ended";
  auto lines = [](const fs::path& f) {
    std::ifstream in(f);
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  const bool ended = test_support::wait_until([&] {
    return lines(runs / "trial-0000" / "metrics.jsonl") == 3 && lines(runs / "trial-0001" / "metrics.jsonl") == 3 &&
           study_jobs_on_controller(cluster, "e2e-slurm-ended") == 2;
  }, std::chrono::seconds(30), std::chrono::milliseconds(100));
  REQUIRE(ended);
  auto r = run_dlsweep(db, {"resume", "e2e-slurm-ended"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Two ended while nobody watched: said so, and counted so (not "followed" then "0 had
  // finished unwatched"); two were still running and are followed.
  CHECK(r.err.find("2 followed on slurm, 0 requeued, 2 had finished unwatched") != std::string::npos);
  CHECK(r.err.find("ended while no orchestrator watched (COMPLETED): its end is taken from slurm") != std::string::npos);
  CHECK(r.err.find("following slurm job") != std::string::npos);
  CHECK(csv(db, "SELECT state, COUNT(*) FROM trials GROUP BY state", dir) == "state,COUNT(*)\nCOMPLETE,4\n");
  // Nothing ran twice: one job per trial, three records each.
  CHECK(csv(db, "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM jobs GROUP BY trial_id)", dir) ==
        "MAX(n)\n1\n");
  CHECK(csv(db, "SELECT COUNT(*) AS n, MAX(seq) AS last FROM records GROUP BY trial_id", dir) ==
        "n,last\n3,2\n3,2\n3,2\n3,2\n");
}

TEST_CASE("slurm: submit --detach-on-term leaves the jobs running on SIGTERM; resume follows them") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  auto dir = fresh_dir("e2e-slurm-detach");
  write_file(dir / "study.yaml", slow_study("e2e-slurm-detach", cluster.conf, 6));
  auto db = dir / "sweep.db";
  int status = submit_and_signal(dir, db, SIGTERM, "--detach-on-term");
  INFO(read_file(dir / "submit.err"));
  REQUIRE(status != -1);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 75);
  CHECK(study_jobs_on_controller(cluster, "e2e-slurm-detach") == 4);
  CHECK(csv(db, "SELECT COUNT(*) FROM trials WHERE state IN ('QUEUED', 'RUNNING')", dir) == "COUNT(*)\n4\n");
  CHECK(csv(db, "SELECT state FROM studies", dir) == "state\nRUNNING\n");
  auto r = run_dlsweep(db, {"resume", "e2e-slurm-detach"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("4 followed on slurm, 0 requeued") != std::string::npos);
  CHECK(csv(db, "SELECT state, COUNT(*) FROM trials GROUP BY state", dir) == "state,COUNT(*)\nCOMPLETE,4\n");
  CHECK(csv(db, "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM jobs GROUP BY trial_id)", dir) ==
        "MAX(n)\n1\n");
}

namespace {

// Submits `study.yaml` --as-job and waits until two trials run; returns the job id.
std::string start_orchestrator_job(const fs::path& dir, const fs::path& db) {
  auto sub = run_dlsweep(db, {"submit", "--as-job", "study.yaml"}, dir);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  REQUIRE(test_support::wait_until([&] {
    return fs::exists(db) && csv(db, "SELECT COUNT(*) FROM trials WHERE state = 'RUNNING'", dir) == "COUNT(*)\n2\n";
  }, std::chrono::seconds(60), std::chrono::milliseconds(100)));
  return sub.out.substr(0, sub.out.find('\n'));
}

bool study_finished(const fs::path& db, const fs::path& dir) {
  return test_support::wait_until([&] { return csv(db, "SELECT state FROM studies", dir) == "state\nFINISHED\n"; },
                                  std::chrono::seconds(120), std::chrono::milliseconds(100));
}

}  // namespace

TEST_CASE("slurm: the orchestrator job of --as-job survives its requeue and renews itself at its time-limit warning") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  // requeue: preemption, a node failure or an admin put the orchestrator's job back in the
  // queue. usr2: the warning Slurm sends before the job's time limit (--signal=B:USR2@lead),
  // sent now: the orchestrator detaches, exits 75, and its script requeues it.
  const std::string how = GENERATE(as<std::string>{}, "requeue", "usr2");
  INFO(how);
  LocalCluster cluster;
  REQUIRE(cluster.up);
  const std::string name = "e2e-orch-" + how;
  auto dir = fresh_dir("e2e-slurm-orch-" + how);
  write_file(dir / "study.yaml", slow_study(name, cluster.conf, 6));
  auto db = dir / "sweep.db";
  const std::string orch_job = start_orchestrator_job(dir, db);
  // What the orchestrator's job asks for: the same renderer as trials, an orchestrator's size.
  const fs::path home = dir / "dlsweep-runs" / (name + ".orchestrator");
  std::string script;
  for (const auto& e : fs::directory_iterator(home))
    if (e.path().extension() == ".sh") script = read_file(e.path());
  CHECK(script.find("#SBATCH --job-name=dlsweep:" + name + ".orchestrator") != std::string::npos);
  CHECK(script.find("#SBATCH --cpus-per-task=1") != std::string::npos);
  CHECK(script.find("#SBATCH --mem=1G") != std::string::npos);
  CHECK(script.find("#SBATCH --requeue") != std::string::npos);
  CHECK(script.find("#SBATCH --time") == std::string::npos);  // the partition's own limit
  auto r = how == "requeue" ? cluster.run({"scontrol", "requeue", orch_job})
                            : cluster.run({"scancel", "--batch", "--signal=USR2", orch_job});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const bool finished = study_finished(db, dir);
  std::string log = read_file(home / "stderr.log");
  INFO(log);
  REQUIRE(finished);
  if (how == "usr2") CHECK(log.find("USR2 (the job's time-limit warning): detaching") != std::string::npos);
  CHECK(log.find("followed on slurm") != std::string::npos);  // the restarted orchestrator resumed
  CHECK(csv(db, "SELECT state, COUNT(*) FROM trials GROUP BY state", dir) == "state,COUNT(*)\nCOMPLETE,4\n");
  // The trials were followed across the restart, not run again.
  CHECK(csv(db, "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM jobs GROUP BY trial_id)", dir) ==
        "MAX(n)\n1\n");
}

TEST_CASE("slurm: a project moved while its jobs run and wait: resume follows the running ones, the waiting "
          "ones run from the new place, nothing is written where it was") {
  // kill -9 of `submit` with two trials running and two waiting in Slurm, `mv projA projB`,
  // `resume` in projB. The running jobs keep their working directory (it moved with the
  // project) and are followed, each run once; the waiting ones were given projA's paths and
  // cannot start there: they run again from projB, with projB's program. (The local backend's
  // variant, and the copy: tests/e2e/relocate_test.cpp.)
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  const fs::path dir = fresh_dir("slurm-relocate");
  const fs::path a = dir / "projA", b = dir / "projB";
  fs::create_directories(a);
  // Relative to its trial directory only: the gate is the project's `go` file.
  write_file(a / "trial.sh", R"(echo "$0" >> ran_by.txt
touch started
i=0
while [ ! -e ../../../go ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done
echo '{"seq":0,"kind":"final","metrics":{"loss":1}}' >> metrics.jsonl
)");
  write_file(a / "study.yaml", fmt::format(R"(name: e2e-slurm-reloc
backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{}', poll_min_s: 0.3, poll_max_s: 1}}
trial:
  command: [/bin/sh, "{{study_dir}}/trial.sh"]
objective: {{metric: loss, mode: min}}
search: {{algorithm: grid}}
space: {{x: [1, 2, 3, 4]}}
runs_dir: runs
)", cluster.conf));
  const int pid = spawn_dlsweep(a, "sweep.db", {"submit", "study.yaml"}, dir / "submit.err");
  REQUIRE(pid > 0);
  REQUIRE(wait_for(a / "runs/e2e-slurm-reloc/trial-0000/started"));
  REQUIRE(wait_for(a / "runs/e2e-slurm-reloc/trial-0001/started"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  CHECK(study_jobs_on_controller(cluster, "e2e-slurm-reloc") == 4);  // two running, two held by the throttle

  fs::rename(a, b);
  write_file(b / "go", "");
  auto r = run_dlsweep("sweep.db", {"resume", "e2e-slurm-reloc"}, b);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find(fmt::format("study 'e2e-slurm-reloc' moved: {} -> {}", a.string(), b.string())) != std::string::npos);
  {
    // None abandoned: every job is followed, or (trials 0 and 1 may end between `go` and the
    // listing) its end is taken from the controller; nothing requeued at resume.
    std::smatch m;
    const std::regex summary("(\\d+) followed on slurm, 0 requeued, (\\d+) had finished unwatched");
    REQUIRE(std::regex_search(r.err, m, summary));
    CHECK(std::stoi(m[1]) + std::stoi(m[2]) == 4);
  }
  CHECK(csv("sweep.db", "SELECT number, state FROM trials ORDER BY number", b) ==
        "number,state\n0,COMPLETE\n1,COMPLETE\n2,COMPLETE\n3,COMPLETE\n");
  CHECK_FALSE(fs::exists(a));  // nothing written where the project was
  for (int n = 0; n < 4; ++n) {
    const fs::path t = b / fmt::format("runs/e2e-slurm-reloc/trial-{:04d}", n);
    INFO(t);
    std::ifstream in(t / "ran_by.txt");
    std::vector<std::string> runs;
    for (std::string l; std::getline(in, l);) runs.push_back(l);
    // The running two ran once, as they were started (projA's program, which moved with them);
    // the waiting two ran once, from projB.
    REQUIRE(runs.size() == 1);
    CHECK(runs[0] == ((n < 2 ? a : b) / "trial.sh").string());
  }
  CHECK(csv("sweep.db", "SELECT COUNT(*) FROM trials WHERE trial_dir NOT LIKE '" + b.string() + "/%'", b) ==
        "COUNT(*)\n0\n");
  CHECK(test_support::wait_until([&] { return study_jobs_on_controller(cluster, "e2e-slurm-reloc") == 0; },
                                 std::chrono::seconds(20), std::chrono::milliseconds(200)));
}

TEST_CASE("slurm: resume --as-job: the resumed orchestrator runs as a Slurm job and finishes the study; refused "
          "where it cannot be") {
  if (auto why = cluster_unavailable()) {
    WARN("skipped: " << *why);
    return;
  }
  LocalCluster cluster;
  REQUIRE(cluster.up);
  KilledSweep k(cluster, "e2e-slurm-resume-job", 3);
  const auto& [dir, db] = k;
  {
    // The job's resume runs again whenever Slurm requeues it: --rerun is refused with it, and
    // nothing changes.
    auto r = run_dlsweep(db, {"resume", "e2e-slurm-resume-job", "--as-job", "--rerun", "failed"}, dir);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--as-job does not take --rerun") != std::string::npos);
  }
  auto r = run_dlsweep(db, {"resume", "e2e-slurm-resume-job", "--as-job"}, dir);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("the orchestrator of e2e-slurm-resume-job (resume) runs as Slurm job") != std::string::npos);
  const fs::path log = dir / "dlsweep-runs" / "e2e-slurm-resume-job.orchestrator" / "stderr.log";
  REQUIRE(test_support::wait_until([&] { return csv(db, "SELECT state FROM studies", dir) == "state\nFINISHED\n"; },
                                   std::chrono::seconds(90), std::chrono::milliseconds(200)));
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("resuming study e2e-slurm-resume-job") != std::string::npos);
  CHECK(text.find("followed on slurm") != std::string::npos);
  CHECK(csv(db, "SELECT state, COUNT(*) FROM trials GROUP BY state", dir) == "state,COUNT(*)\nCOMPLETE,4\n");
  CHECK(csv(db, "SELECT MAX(n) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM jobs GROUP BY trial_id)", dir) ==
        "MAX(n)\n1\n");
}
