// When a pilot worker may rerun a task whose earlier run ended unseen (pool_rerun.hpp), what
// it looks at (pool_lease.hpp: the run's lease, its process group), and which Slurm states
// count a worker alive on resume. No Slurm: the decision is pure, the probes run on forked
// processes of this test.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "schedulers/slurm/pool_backend.hpp"
#include "schedulers/slurm/pool_lease.hpp"
#include "schedulers/slurm/pool_rerun.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_until.hpp"

using namespace dlsweep::sched::pool;
namespace fs = std::filesystem;

namespace {

RunRecord earlier(const std::string& host = "n1") { return RunRecord{host, 4242, 1.0e9, "w/w1/t00000001-a0.lease"}; }

EarlierRunSeen seen(LeaseState lease, bool same_host, bool group_alive) { return EarlierRunSeen{lease, same_host, group_alive}; }

/// A child in a process group of its own that holds (inherits) `lease`'s descriptor and waits
/// to be killed; `escape`: it leaves the group first (setsid), as a daemon would.
pid_t holder(const Lease& lease, bool escape = false) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (escape) ::setsid();
    else ::setpgid(0, 0);
    (void)lease.fd();  // inherited, not closed
    for (;;) ::pause();
  }
  if (!escape) ::setpgid(pid, pid);
  return pid;
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

TEST_CASE("pool rerun: a held lease or a live process group on this host means wait", "[pool][rerun]") {
  for (bool same : {true, false})
    for (bool alive : {true, false}) {
      INFO("same host " << same << ", group alive " << alive);
      CHECK(decide_rerun(earlier(), seen(LeaseState::held, same, alive)).verdict == RerunVerdict::wait);
    }
  // The lease is free, but a process stayed in the group (it closed what it inherited).
  for (auto lease : {LeaseState::free, LeaseState::missing, LeaseState::unsupported}) {
    auto d = decide_rerun(earlier(), seen(lease, true, true));
    CHECK(d.verdict == RerunVerdict::wait);
    CHECK_THAT(d.why, Catch::Contains("process group 4242 on n1") && Catch::Contains("live process"));
  }
  CHECK_THAT(decide_rerun(earlier(), seen(LeaseState::held, false, false)).why,
             Catch::Contains("w/w1/t00000001-a0.lease"));
}

TEST_CASE("pool rerun: a free lease, or an empty group on this host, means the earlier run is gone", "[pool][rerun]") {
  CHECK(decide_rerun(earlier(), seen(LeaseState::free, false, false)).verdict == RerunVerdict::start);
  CHECK(decide_rerun(earlier(), seen(LeaseState::free, true, false)).verdict == RerunVerdict::start);
  CHECK(decide_rerun(earlier(), seen(LeaseState::missing, true, false)).verdict == RerunVerdict::start);
  CHECK(decide_rerun(earlier(), seen(LeaseState::unsupported, true, false)).verdict == RerunVerdict::start);
  // Another host and nothing to check there: said so, not hidden.
  for (auto lease : {LeaseState::missing, LeaseState::unsupported}) {
    auto d = decide_rerun(earlier("n7"), seen(lease, false, false));
    CHECK(d.verdict == RerunVerdict::start_unchecked);
    CHECK_THAT(d.why, Catch::Contains("cannot be checked") && Catch::Contains("n7"));
  }
}

TEST_CASE("pool rerun: of several earlier runs, any that may still run means wait", "[pool][rerun]") {
  const std::vector<RunRecord> runs{earlier("n1"), earlier("n2")};
  CHECK(decide_rerun(std::vector<RunRecord>{}, {}).verdict == RerunVerdict::start);
  CHECK(decide_rerun(runs, {seen(LeaseState::free, true, false), seen(LeaseState::held, false, false)}).verdict ==
        RerunVerdict::wait);
  CHECK(decide_rerun(runs, {seen(LeaseState::missing, false, false), seen(LeaseState::free, false, false)}).verdict ==
        RerunVerdict::start_unchecked);
  CHECK(decide_rerun(runs, {seen(LeaseState::free, false, false), seen(LeaseState::free, true, false)}).verdict ==
        RerunVerdict::start);
  // A run not looked at is not vouched for.
  CHECK(decide_rerun(runs, {seen(LeaseState::free, true, false)}).verdict == RerunVerdict::wait);
}

TEST_CASE("pool lease: held while any process that inherited it lives, in its group or not; free after",
          "[pool][rerun]") {
  test_support::TempDir dir;
  const fs::path path = dir.path() / "t1.lease";
  CHECK(probe_lease(path) == LeaseState::missing);
  for (bool escape : {false, true}) {
    INFO("escaped its group: " << escape);
    auto lease = Lease::take(path);
    REQUIRE(lease);
    pid_t a = holder(*lease, escape), b = holder(*lease, escape);
    lease->close();  // the worker's own copy: the children hold it now
    CHECK(probe_lease(path) == LeaseState::held);
    auto again = Lease::take(path);
    CHECK_FALSE(again);  // no second run takes it while the first lives
    kill_and_reap(a);
    CHECK(probe_lease(path) == LeaseState::held);  // b still has it
    kill_and_reap(b);
    CHECK(probe_lease(path) == LeaseState::free);
  }
}

TEST_CASE("pool lease: a process group counts while one member is alive; a zombie (dead, not reaped) does not",
          "[pool][rerun]") {
  CHECK_FALSE(group_has_live_process(0));
  CHECK_FALSE(group_has_live_process(1));
  CHECK(group_has_live_process(static_cast<long>(::getpgrp())));  // this test's own group
  pid_t leader = ::fork();
  REQUIRE(leader >= 0);
  if (leader == 0) {
    ::setpgid(0, 0);
    ::_exit(0);
  }
  ::setpgid(leader, leader);
  // Dead but not reaped: a zombie, as a killed trial stays where nobody reaps orphans.
  REQUIRE(test_support::wait_until([&] {
    std::ifstream in(fmt::format("/proc/{}/stat", leader));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return stat.find(") Z ") != std::string::npos;
  }));
  CHECK(::kill(leader, 0) == 0);  // kill -0 still "finds" it
  CHECK_FALSE(group_has_live_process(leader));
  ::waitpid(leader, nullptr, 0);
  CHECK_FALSE(group_has_live_process(leader));
}

TEST_CASE("pool resume: a worker's allocation counts alive in every state that is not final", "[pool][rerun]") {
  using dlsweep::sched::pool_worker_alive;
  for (const char* s : {"PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
                        "STOPPED", "SIGNALING", "RESIZING", "SPECIAL_EXIT", "SOMETHING_NEW"}) {
    INFO(s);
    CHECK(pool_worker_alive(s));
  }
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "CANCELLED by 0", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                        "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}) {
    INFO(s);
    CHECK_FALSE(pool_worker_alive(s));
  }
}
