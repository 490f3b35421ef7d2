// The pilot pool's files and the worker loop, without Slurm: tasks are plain bash scripts,
// each worker a forked process running run_worker() (it installs signal handlers).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "schedulers/slurm/pool_lease.hpp"
#include "schedulers/slurm/pool_worker.hpp"
#include "tests/support/process_state.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

using namespace dlsweep::sched::pool;
namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Queues a task whose script is `body` (bash).
void queue_task(const PoolDir& pool, const std::string& tag, const std::string& body, double estimate_s = 0,
                double timeout_s = 0, int ranks = 1) {
  const fs::path script = pool.scripts_dir() / (tag + ".sh");
  std::ofstream(script) << "#!/bin/bash\n" << body << "\n";
  REQUIRE(pool.enqueue(tag, TaskFile{"s/" + tag + "/0", script, ranks, timeout_s, estimate_s}));
}

/// run_worker in a child process; returns its pid.
pid_t start_worker(const WorkerConfig& c) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::ofstream log(c.pool / (c.id + ".log"));
    int rc = run_worker(c, [&](const std::string& l) { log << l << "\n" << std::flush; });
    ::_exit(rc);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

WorkerConfig config(const PoolDir& pool, const std::string& id) {
  WorkerConfig c;
  c.pool = pool.root();
  c.id = id;
  c.idle_s = 30;
  c.grace_s = 1;
  c.poll_s = 0.02;
  return c;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("pool: two workers racing for 60 tasks: each runs exactly once, and both get some", "[pool]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  for (int i = 0; i < 60; ++i)
    queue_task(pool, task_tag(i, 0), fmt::format("echo $DLSWEEP_WORKER >> '{}'", (dir.path() / "ran.log").string()));
  REQUIRE(pool.set_estimate_s(0.1));
  pid_t a = start_worker(config(pool, "w1")), b = start_worker(config(pool, "w2"));
  REQUIRE(test_support::wait_until([&] { return pool.queued_tags().empty(); }, std::chrono::seconds(60)));
  std::ofstream(pool.stop_file()) << "stop\n";
  CHECK(wait_exit(a) == 0);
  CHECK(wait_exit(b) == 0);
  std::size_t exits = 0;
  std::map<std::string, int> by_worker;
  for (const auto& claim : pool.claims()) {
    REQUIRE(claim.has_exit);
    auto e = PoolDir::read_exit(pool.in_worker(claim.worker, claim.tag, ".exit"));
    REQUIRE(e);
    CHECK(e->exit_code == 0);
    ++exits;
    ++by_worker[claim.worker];
  }
  CHECK(exits == 60);
  std::ifstream in(dir.path() / "ran.log");
  std::size_t lines = 0;
  for (std::string l; std::getline(in, l);) ++lines;
  CHECK(lines == 60);
  CHECK(by_worker.size() == 2);
}

TEST_CASE("pool: the worker records exit codes in order, and exits on stop once the queue is empty", "[pool]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  queue_task(pool, task_tag(1, 0), "exit 0");
  queue_task(pool, task_tag(2, 0), "exit 3");
  queue_task(pool, task_tag(3, 0), "kill -9 $$");
  std::ofstream(pool.stop_file()) << "stop\n";
  pid_t w = start_worker(config(pool, "w1"));
  CHECK(wait_exit(w) == 0);
  CHECK(pool.queued_tags().empty());
  auto exit_of = [&](int trial) { return PoolDir::read_exit(pool.in_worker("w1", task_tag(trial, 0), ".exit")); };
  REQUIRE(exit_of(1));
  CHECK(exit_of(1)->exit_code == 0);
  CHECK(exit_of(2)->exit_code == 3);
  CHECK(exit_of(3)->signal == SIGKILL);
  auto run = PoolDir::read_run(pool.in_worker("w1", task_tag(1, 0), ".run"));
  REQUIRE(run);
  CHECK(run->pgid > 1);
  CHECK_FALSE(run->host.empty());
}

TEST_CASE("pool: a worker near its time limit takes only what fits and retires; a fresh one takes what no "
          "allocation could fit",
          "[pool][time]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  queue_task(pool, task_tag(1, 0), "exit 0", /*estimate_s=*/20);
  {
    // The allocation began 100 s ago and ends in 10: a 20 s trial does not fit the rest, a
    // fresh allocation (110 s) would take it.
    WorkerConfig c = config(pool, "w1");
    c.start_time = now_s() - 100;
    c.end_time = now_s() + 10;
    c.margin_s = 2;
    CHECK(wait_exit(start_worker(c)) == 0);
    CHECK(pool.queued_tags() == std::vector<std::string>{task_tag(1, 0)});
    CHECK(read_all(pool.root() / "w1.log").find("retiring after 0 trial(s)") != std::string::npos);
  }
  {
    // A whole allocation is 10 s: nothing better will come; it runs it.
    WorkerConfig c = config(pool, "w2");
    c.end_time = now_s() + 10;
    c.margin_s = 2;
    std::ofstream(pool.stop_file()) << "stop\n";
    CHECK(wait_exit(start_worker(c)) == 0);
    CHECK(pool.queued_tags().empty());
    CHECK(fs::exists(pool.in_worker("w2", task_tag(1, 0), ".exit")));
  }
  {
    // The longest trial so far (pool/estimate) counts for tasks without their own estimate.
    queue_task(pool, task_tag(2, 0), "exit 0");
    REQUIRE(pool.set_estimate_s(50));
    WorkerConfig c = config(pool, "w3");
    c.start_time = now_s() - 100;
    c.end_time = now_s() + 30;
    CHECK(wait_exit(start_worker(c)) == 0);
    CHECK(pool.queued_tags() == std::vector<std::string>{task_tag(2, 0)});
  }
  {
    // Too many ranks for this allocation: left for a bigger one.
    PoolDir p2(dir.path() / "pool2");
    REQUIRE(p2.create());
    queue_task(p2, task_tag(1, 0), "exit 0", 0, 0, /*ranks=*/4);
    WorkerConfig c = config(p2, "w1");
    c.ranks = 2;
    CHECK(wait_exit(start_worker(c)) == 0);
    CHECK(p2.queued_tags().size() == 1);
    CHECK(read_all(p2.root() / "w1.log").find("need more than this allocation's 2 task(s)") != std::string::npos);
  }
}

TEST_CASE("pool: cancel file and timeout stop the trial's whole process group and say why", "[pool]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const fs::path child_pid = dir.path() / "child.pid";
  // A trial that ignores TERM in its shell and leaves a child behind: KILL of the group after the grace.
  queue_task(pool, task_tag(1, 0), fmt::format("trap '' TERM; sleep 300 & echo $! > '{}'; wait", child_pid.string()));
  queue_task(pool, task_tag(2, 0), "sleep 300", 0, /*timeout_s=*/0.5);
  std::ofstream(pool.stop_file()) << "stop\n";
  pid_t w = start_worker(config(pool, "w1"));
  REQUIRE(test_support::wait_until([&] { return fs::exists(pool.in_worker("w1", task_tag(1, 0), ".run")) &&
                                                !read_all(child_pid).empty(); }));
  REQUIRE(pool.request_cancel("w1", task_tag(1, 0)));
  CHECK(wait_exit(w) == 0);
  auto e1 = PoolDir::read_exit(pool.in_worker("w1", task_tag(1, 0), ".exit"));
  REQUIRE(e1);
  CHECK(e1->cancelled);
  CHECK(e1->signal == SIGKILL);
  const pid_t orphan = static_cast<pid_t>(std::stol(read_all(child_pid)));
  CHECK(test_support::wait_until([&] { return !test_support::process_running(orphan); }));
  auto e2 = PoolDir::read_exit(pool.in_worker("w1", task_tag(2, 0), ".exit"));
  REQUIRE(e2);
  CHECK(e2->timed_out);
  CHECK_FALSE(e2->cancelled);
}

TEST_CASE("pool: the time-limit warning reaches the running trial, whose checkpointed exit is recorded; the worker "
          "then takes nothing more. TERM: the trial is stopped and its end not recorded",
          "[pool][signal]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const fs::path ready = dir.path() / "ready";
  // As dlsweep-train does: USR2 -> checkpoint -> exit 75.
  queue_task(pool, task_tag(1, 0), fmt::format("trap 'exit 75' USR2; touch '{}'; while :; do sleep 0.05; done", ready.string()));
  queue_task(pool, task_tag(2, 0), "exit 0");
  pid_t w = start_worker(config(pool, "w1"));
  REQUIRE(test_support::wait_until([&] { return fs::exists(ready); }));
  ::kill(w, SIGUSR2);
  CHECK(wait_exit(w) == 0);
  auto e = PoolDir::read_exit(pool.in_worker("w1", task_tag(1, 0), ".exit"));
  REQUIRE(e);
  CHECK(e->warned);
  CHECK(e->exit_code == 75);
  CHECK(pool.queued_tags() == std::vector<std::string>{task_tag(2, 0)});

  fs::remove(ready);
  queue_task(pool, task_tag(3, 0), fmt::format("touch '{}'; sleep 300", ready.string()));
  pool.withdraw(task_tag(2, 0));
  pid_t w2 = start_worker(config(pool, "w2"));
  REQUIRE(test_support::wait_until([&] { return fs::exists(ready); }));
  ::kill(w2, SIGTERM);
  CHECK(wait_exit(w2) == 0);
  CHECK(fs::exists(pool.in_worker("w2", task_tag(3, 0), ".task")));
  CHECK_FALSE(fs::exists(pool.in_worker("w2", task_tag(3, 0), ".exit")));  // the orchestrator requeues it
  auto run = PoolDir::read_run(pool.in_worker("w2", task_tag(3, 0), ".run"));
  REQUIRE(run);
  CHECK(test_support::wait_until([&] { return !group_has_live_process(run->pgid); }));
  // Back to the queue, records dropped: exactly what a worker's end makes the orchestrator do.
  CHECK(pool.unclaim(task_tag(3, 0), "w2"));
  CHECK(pool.queued_tags() == std::vector<std::string>{task_tag(3, 0)});
  CHECK_FALSE(fs::exists(pool.in_worker("w2", task_tag(3, 0), ".run")));
}

TEST_CASE("pool: a task that goes back to the queue names its run if that run had no end", "[pool][rerun]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  fs::create_directories(pool.worker_dir("w1"));
  queue_task(pool, task_tag(1, 0), "exit 0");
  queue_task(pool, task_tag(2, 0), "exit 0");
  REQUIRE(pool.claim(task_tag(1, 0), "w1"));
  REQUIRE(pool.claim(task_tag(2, 0), "w1"));
  REQUIRE(pool.write_run("w1", task_tag(1, 0), RunRecord{"n1", 777, 1.0e9, "w/w1/t00000001-a0.lease"}));
  // Trial 2 ended (stopped at the warning with a checkpoint): its end was seen, nothing to wait for.
  REQUIRE(pool.write_run("w1", task_tag(2, 0), RunRecord{"n1", 778, 1.0e9, ""}));
  REQUIRE(pool.write_exit("w1", task_tag(2, 0), ExitRecord{75, 0, true, false, false, 1, false, ""}));
  REQUIRE(pool.unclaim(task_tag(1, 0), "w1"));
  REQUIRE(pool.unclaim(task_tag(2, 0), "w1"));
  auto t1 = PoolDir::read_task(pool.queued(task_tag(1, 0)));
  REQUIRE(t1);
  REQUIRE(t1->unfinished_runs.size() == 1);
  CHECK(t1->unfinished_runs[0].host == "n1");
  CHECK(t1->unfinished_runs[0].pgid == 777);
  CHECK(t1->unfinished_runs[0].lease == "w/w1/t00000001-a0.lease");
  CHECK(t1->token == "s/" + task_tag(1, 0) + "/0");  // the rest of the task as it was
  auto t2 = PoolDir::read_task(pool.queued(task_tag(2, 0)));
  REQUIRE(t2);
  CHECK(t2->unfinished_runs.empty());
  // Claimed and lost again: both runs are named.
  REQUIRE(pool.claim(task_tag(1, 0), "w1"));
  REQUIRE(pool.write_run("w1", task_tag(1, 0), RunRecord{"n2", 999, 1.0e9, ""}));
  REQUIRE(pool.unclaim(task_tag(1, 0), "w1"));
  t1 = PoolDir::read_task(pool.queued(task_tag(1, 0)));
  REQUIRE(t1);
  REQUIRE(t1->unfinished_runs.size() == 2);
  CHECK(t1->unfinished_runs[1].host == "n2");
}

TEST_CASE("pool: kill -9 of a worker and nothing else: the rerun waits for the earlier run's process group, then "
          "for a process that left the group but holds the run's lease; it never runs twice at once",
          "[pool][rerun]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const fs::path runs = dir.path() / "runs.log", escaped = dir.path() / "escaped.pid";
  // On w1: a process leaves the trial's group (setsid, as a daemon does) and keeps what it
  // inherited; the rest of the trial runs on in the group. On any other worker: done at once.
  queue_task(pool, task_tag(1, 0),
             fmt::format("echo \"start $DLSWEEP_WORKER\" >> '{0}'\n"
                         "if [[ $DLSWEEP_WORKER == w1 ]]; then setsid sleep 300 & echo $! > '{1}'; sleep 300; fi\n"
                         "echo end >> '{0}'",
                         runs.string(), escaped.string()));
  pid_t w1 = start_worker(config(pool, "w1"));
  // The trial's escaped process may write its pid before the worker has written the run's
  // record (the worker's write follows its fork; under load the child runs first): wait for both.
  REQUIRE(test_support::wait_until([&] {
    return !read_all(escaped).empty() && PoolDir::read_run(pool.in_worker("w1", task_tag(1, 0), ".run"));
  }));
  auto run = PoolDir::read_run(pool.in_worker("w1", task_tag(1, 0), ".run"));
  REQUIRE(run);
  CHECK_FALSE(run->lease.empty());
  // The worker dies with no wrapper to stop its trial; the orchestrator, seeing its
  // allocation end, puts the task back.
  ::kill(w1, SIGKILL);
  CHECK(wait_exit(w1) == 128 + SIGKILL);
  REQUIRE(pool.unclaim(task_tag(1, 0), "w1"));
  auto w2c = config(pool, "w2");
  pid_t w2 = start_worker(w2c);
  const fs::path w2log = pool.root() / "w2.log";
  REQUIRE(test_support::wait_until([&] { return read_all(w2log).find("still has a live process") != std::string::npos; }));
  CHECK(read_all(runs) == "start w1\n");
  // The group is stopped; the process that left it still holds the lease.
  ::kill(-static_cast<pid_t>(run->pgid), SIGKILL);
  REQUIRE(test_support::wait_until([&] { return read_all(w2log).find("still holds its lease") != std::string::npos; }));
  CHECK(read_all(runs) == "start w1\n");
  ::kill(static_cast<pid_t>(std::stol(read_all(escaped))), SIGKILL);
  REQUIRE(test_support::wait_until([&] { return fs::exists(pool.in_worker("w2", task_tag(1, 0), ".exit")); }));
  CHECK(read_all(runs) == "start w1\nstart w2\nend\n");
  CHECK_THAT(read_all(w2log), Catch::Contains("is gone: its lease is free"));
  // The claimed task no longer names the run it waited for; w2's own lease is gone with its end.
  auto t = PoolDir::read_task(pool.in_worker("w2", task_tag(1, 0), ".task"));
  REQUIRE(t);
  CHECK(t->unfinished_runs.empty());
  CHECK_FALSE(fs::exists(pool.lease_path(run->lease)));
  CHECK_FALSE(fs::exists(pool.in_worker("w2", task_tag(1, 0), ".lease")));
  std::ofstream(pool.stop_file()) << "stop\n";
  CHECK(wait_exit(w2) == 0);
}

namespace {

/// Queues trial 1, whose script exits 143 at once while a TERM reaches the worker (w1) a moment
/// later, as an allocation's TERM reaches every process of the job; runs the worker to its
/// exit (0) and returns its log.
std::string run_self_term_trial(const PoolDir& pool, const WorkerConfig& c) {
  queue_task(pool, task_tag(1, 0), "(sleep 0.1; kill -TERM $PPID) &\nexit 143");
  pid_t w1 = start_worker(c);
  CHECK(wait_exit(w1) == 0);
  return read_all(pool.root() / "w1.log");
}

}  // namespace

TEST_CASE("pool: a trial that dies of the allocation's TERM before the worker reads its own is stopped with the "
          "worker (not recorded, no other trial taken), not a failure with exit 143",
          "[pool][rerun]") {
  // scancel, a requeue, a preemption: slurmd TERMs every process of the job at once. Here the
  // trial's script exits 143 at once and its TERM reaches the worker a moment later, as when
  // the trial is quicker to die than the worker to read its signal (seen on the local
  // cluster: the trial recorded FAILED, exit 143, and the dying worker started the next one).
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  queue_task(pool, task_tag(2, 0), "exit 0");
  const std::string log = run_self_term_trial(pool, config(pool, "w1"));
  INFO(log);
  CHECK_THAT(log, Catch::Contains(task_tag(1, 0) + ": ended by the TERM that stops this worker"));
  CHECK_THAT(log, Catch::Contains(task_tag(1, 0) + ": stopped with the worker; not recorded"));
  CHECK_FALSE(fs::exists(pool.in_worker("w1", task_tag(1, 0), ".exit")));
  CHECK(fs::exists(pool.in_worker("w1", task_tag(1, 0), ".run")));  // for the orchestrator to put back
  CHECK(fs::exists(pool.queued(task_tag(2, 0))));                    // the stopping worker took nothing more
}

TEST_CASE("pool: a trial stopped by the TERM of its allocation's time limit is recorded, not queued again to start "
          "over for ever",
          "[pool][rerun]") {
  // A trial without a checkpoint, longer than any allocation: at the time limit Slurm TERMs the
  // job; queued again it would start over on the next worker and be stopped the same way.
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  WorkerConfig c = config(pool, "w1");
  c.end_time = now_s() + 2;  // the allocation ends now: this TERM is its time limit's
  const std::string log = run_self_term_trial(pool, c);
  INFO(log);
  CHECK_THAT(log, Catch::Contains(task_tag(1, 0) + ": stopped at the allocation's time limit without a checkpoint"));
  auto rec = PoolDir::read_exit(pool.in_worker("w1", task_tag(1, 0), ".exit"));
  REQUIRE(rec.has_value());
  CHECK(rec->exit_code == 143);
}

TEST_CASE("pool: a worker started again under the same id (its allocation requeued) runs the task its earlier "
          "start left without an end first, once that run is gone",
          "[pool][rerun]") {
  // Slurm requeues a worker's job and runs its batch script again from the start: the same
  // `dlsweep worker --id w1`, whose directory still holds the trial the first start was
  // running. The orchestrator leaves that task with w1 (its job lives on), so nobody else
  // would ever run it (before: it waited there until w1 idled out, 120 s).
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const fs::path runs = dir.path() / "runs.log", flag = dir.path() / "ran";
  // The first run sleeps (until the test stops it); a run after it ends at once.
  queue_task(pool, task_tag(1, 0),
             fmt::format("echo \"start $DLSWEEP_WORKER\" >> '{0}'\n"
                         "if [[ ! -e '{1}' ]]; then touch '{1}'; sleep 300; fi\n"
                         "echo end >> '{0}'",
                         runs.string(), flag.string()));
  pid_t first = start_worker(config(pool, "w1"));
  REQUIRE(test_support::wait_until([&] {
    return read_all(runs) == "start w1\n" && PoolDir::read_run(pool.in_worker("w1", task_tag(1, 0), ".run"));
  }));
  auto run = PoolDir::read_run(pool.in_worker("w1", task_tag(1, 0), ".run"));
  REQUIRE(run);
  // The first start dies (kill -9: its trial's group runs on, as where the wrapper died too).
  ::kill(first, SIGKILL);
  CHECK(wait_exit(first) == 128 + SIGKILL);
  // Something else waits in the queue meanwhile.
  queue_task(pool, task_tag(2, 0), fmt::format("echo t2 >> '{}'", runs.string()));
  fs::rename(pool.root() / "w1.log", pool.root() / "w1-first.log");
  pid_t again = start_worker(config(pool, "w1"));
  const fs::path log = pool.root() / "w1.log";
  REQUIRE(test_support::wait_until([&] { return read_all(log).find("still has a live process") != std::string::npos; }));
  CHECK_THAT(read_all(log), Catch::Contains(task_tag(1, 0) + ": started by an earlier start of this worker"));
  // It waits for the earlier run, and takes nothing else before it.
  CHECK(read_all(runs) == "start w1\n");
  CHECK_FALSE(fs::exists(pool.in_worker("w1", task_tag(1, 0), ".run")));  // not this start's run
  ::kill(-static_cast<pid_t>(run->pgid), SIGKILL);
  REQUIRE(test_support::wait_until([&] { return fs::exists(pool.in_worker("w1", task_tag(2, 0), ".exit")); }));
  CHECK(read_all(runs) == "start w1\nstart w1\nend\nt2\n");
  auto rec = PoolDir::read_exit(pool.in_worker("w1", task_tag(1, 0), ".exit"));
  REQUIRE(rec);
  CHECK(rec->exit_code == 0);
  auto t = PoolDir::read_task(pool.in_worker("w1", task_tag(1, 0), ".task"));
  REQUIRE(t);
  CHECK(t->unfinished_runs.empty());
  CHECK_THAT(read_all(log), Catch::Contains(task_tag(1, 0) + ": ran before without an end"));
  std::ofstream(pool.stop_file()) << "stop\n";
  CHECK(wait_exit(again) == 0);
}

TEST_CASE("pool: a rerun waiting for its earlier run is cancelled without running; one whose earlier run is on "
          "another host with nothing to check starts and says so",
          "[pool][rerun]") {
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const fs::path ran = dir.path() / "ran";
  // An earlier run on this host whose group is still alive: a sleeping child of this test.
  pid_t earlier = ::fork();
  REQUIRE(earlier >= 0);
  if (earlier == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(earlier, earlier);
  const fs::path script = pool.scripts_dir() / "t.sh";
  std::ofstream(script) << "#!/bin/bash\ntouch '" << ran.string() << "'\n";
  TaskFile t1;
  t1.token = "s/1/0";
  t1.script = script;
  t1.unfinished_runs.push_back(RunRecord{this_host(), static_cast<long>(earlier), 1.0e9, ""});
  REQUIRE(pool.enqueue(task_tag(1, 0), t1));
  pid_t w = start_worker(config(pool, "w1"));
  REQUIRE(test_support::wait_until(
      [&] { return read_all(pool.root() / "w1.log").find("waiting before it starts again") != std::string::npos; }));
  REQUIRE(pool.request_cancel("w1", task_tag(1, 0)));
  REQUIRE(test_support::wait_until([&] { return fs::exists(pool.in_worker("w1", task_tag(1, 0), ".exit")); }));
  auto e = PoolDir::read_exit(pool.in_worker("w1", task_tag(1, 0), ".exit"));
  REQUIRE(e);
  CHECK(e->cancelled);
  CHECK_FALSE(fs::exists(ran));
  CHECK_FALSE(fs::exists(pool.in_worker("w1", task_tag(1, 0), ".run")));
  ::kill(earlier, SIGKILL);
  ::waitpid(earlier, nullptr, 0);

  TaskFile t2 = t1;
  t2.token = "s/2/0";
  t2.unfinished_runs.clear();
  t2.unfinished_runs.push_back(RunRecord{"some-other-node", 12345, 1.0e9, ""});
  REQUIRE(pool.enqueue(task_tag(2, 0), t2));
  REQUIRE(test_support::wait_until([&] { return fs::exists(pool.in_worker("w1", task_tag(2, 0), ".exit")); }));
  CHECK(fs::exists(ran));
  CHECK_THAT(read_all(pool.root() / "w1.log"), Catch::Contains("cannot be checked from here (another host"));
  std::ofstream(pool.stop_file()) << "stop\n";
  CHECK(wait_exit(w) == 0);
}

TEST_CASE("pool: a trial the worker cannot start is recorded as not started, with the reason, never as the "
          "program's own exit", "[pool]") {
  // A kept-imported trial whose directory is gone: the project's spawner reports the failed
  // step (the hand-forked worker exited 70 in the child, which read as the program's exit).
  test_support::TempDir dir;
  PoolDir pool(dir.path() / "pool");
  REQUIRE(pool.create());
  const std::string tag = task_tag(1, 0);
  const fs::path script = pool.scripts_dir() / (tag + ".sh");
  std::ofstream(script) << "#!/bin/bash\nexit 0\n";
  TaskFile t{"s/" + tag + "/0", script, 1, 0, 0, true, {"python3", "-m", "dlsweep_optuna", "obj.py:objective"},
             {}, dir.path() / "no-such-trial-dir", {}};
  REQUIRE(pool.enqueue(tag, t));
  std::ofstream(pool.stop_file()) << "stop\n";
  CHECK(wait_exit(start_worker(config(pool, "w1"))) == 0);
  auto e = PoolDir::read_exit(pool.in_worker("w1", tag, ".exit"));
  REQUIRE(e);
  CHECK(e->not_started);
  CHECK(e->exit_code == 127);
  CHECK_THAT(e->error, Catch::Contains("changing to the working directory failed"));
  CHECK_THAT(e->error, Catch::Contains("no-such-trial-dir"));
}
