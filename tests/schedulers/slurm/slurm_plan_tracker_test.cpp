// The pure rules: array planning (shape grouping, MaxArraySize split, cross-array throttle)
// and the tracker's mapping of controller records to job events.
#include <catch2/catch.hpp>

#include "schedulers/slurm/plan.hpp"
#include "schedulers/slurm/tracker.hpp"
#include "slurm_test_support.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
using K = JobEventKind;

namespace {

std::vector<WaitingJob> jobs(std::size_t n, Shape s = {}, const std::string& prefix = "j") {
  std::vector<WaitingJob> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back({prefix + std::to_string(i), s});
  return out;
}

JobRecord task(std::uint32_t array, std::uint32_t t, JobState st, int wait_status = 0, int restarts = 0) {
  JobRecord r;
  r.job_id = array + 100 + t;
  r.array_job_id = array;
  r.array_task_id = t;
  r.state = st;
  r.state_name = std::string(to_string(st));
  r.wait_status = wait_status;
  r.restart_count = restarts;
  return r;
}

JobRecord meta(std::uint32_t array, std::vector<std::uint32_t> pending) {
  JobRecord r;
  r.job_id = array;
  r.array_job_id = array;
  r.pending_tasks = std::move(pending);
  r.state = JobState::pending;
  r.state_name = "PENDING";
  return r;
}

std::vector<K> kinds(const std::vector<TaskChange>& v, const std::string& id) {
  std::vector<K> out;
  for (const auto& c : v)
    if (c.id == id) out.push_back(c.kind);
  return out;
}

}  // namespace

TEST_CASE("plan: one array per shape (study, ranks, time limit), in submission order", "[slurm][plan]") {
  auto w = jobs(3, {"s", 1, 0}, "a");
  auto b = jobs(2, {"s", 4, 10}, "b");
  auto other = jobs(1, {"t", 1, 0}, "c");
  std::vector<WaitingJob> mixed = {w[0], b[0], w[1], other[0], b[1], w[2]};
  auto plan = plan_arrays(mixed, 100, 0, 1001);
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].ids == std::vector<std::string>{"a0", "a1", "a2"});
  CHECK(plan[0].throttle == 0);
  CHECK(plan[1].ids == std::vector<std::string>{"b0", "b1"});
  CHECK(plan[1].shape == Shape{"s", 4, 10});
  CHECK(plan[2].ids == std::vector<std::string>{"c0"});  // another study: another job name
}

TEST_CASE("plan: split above MaxArraySize", "[slurm][plan]") {
  auto plan = plan_arrays(jobs(10), 100, 0, 4);
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].ids.size() == 4);
  CHECK(plan[1].ids.size() == 4);
  CHECK(plan[2].ids.size() == 2);
  CHECK(plan[2].ids.front() == "j8");
}

TEST_CASE("plan: the throttle bounds running jobs across arrays", "[slurm][plan]") {
  SECTION("a big batch is one throttled array") {
    auto plan = plan_arrays(jobs(1000), 8, 0, 1001);
    REQUIRE(plan.size() == 1);
    CHECK(plan[0].ids.size() == 1000);
    CHECK(plan[0].throttle == 8);
  }
  SECTION("live tasks of earlier arrays use up the bound") {
    CHECK(plan_arrays(jobs(5), 4, 4, 1001).empty());
    auto plan = plan_arrays(jobs(5), 4, 1, 1001);
    REQUIRE(plan.size() == 1);
    CHECK(plan[0].ids.size() == 5);
    CHECK(plan[0].throttle == 3);
  }
  SECTION("split arrays wait for room") {
    auto plan = plan_arrays(jobs(10), 2, 0, 4);
    REQUIRE(plan.size() == 1);  // the next chunk waits until fewer than 2 are live
    CHECK(plan[0].throttle == 2);
  }
  CHECK(time_limit_minutes(0) == 0);
  CHECK(time_limit_minutes(1) == 1);
  CHECK(time_limit_minutes(60) == 1);
  CHECK(time_limit_minutes(61) == 2);
}

TEST_CASE("tracker: queued array tasks start and end with their exit codes", "[slurm][tracker]") {
  Tracker t;
  t.add("a", 5, 0u);
  t.add("b", 5, 1u);
  t.add("c", 5, 2u);
  CHECK(t.live_job_ids() == std::vector<std::uint32_t>{5});
  auto c1 = t.observe({task(5, 0, JobState::running), meta(5, {1, 2})});
  CHECK(kinds(c1, "a") == std::vector<K>{K::started});
  CHECK(kinds(c1, "b").empty());
  CHECK(c1[0].native_id == "5_0");
  auto c2 = t.observe({task(5, 0, JobState::completed), task(5, 1, JobState::failed, 3 << 8),
                       task(5, 2, JobState::failed, 9)});
  CHECK(kinds(c2, "a") == std::vector<K>{K::exited});
  CHECK(kinds(c2, "b") == std::vector<K>{K::started, K::exited});  // ran between two polls
  REQUIRE(c2.size() == 5);
  CHECK(c2[2].exit_code == 3);
  CHECK(c2[2].signal == 0);
  CHECK(c2[4].signal == 9);
  CHECK(c2[4].exit_code == 137);
  CHECK(t.live() == 0);
  CHECK(t.observe({task(5, 0, JobState::completed)}).empty());  // never twice
}

TEST_CASE("tracker: requeue is reported, then the new run", "[slurm][tracker]") {
  Tracker t;
  t.add("a", 5, 0u);
  CHECK(kinds(t.observe({task(5, 0, JobState::running)}), "a") == std::vector<K>{K::started});
  CHECK(kinds(t.observe({task(5, 0, JobState::pending, 0, 1)}), "a") == std::vector<K>{K::requeued});
  CHECK(t.observe({task(5, 0, JobState::pending, 0, 1)}).empty());
  CHECK(kinds(t.observe({task(5, 0, JobState::running, 0, 1)}), "a") == std::vector<K>{K::started});
  // Requeued and running again between two polls: both reported.
  CHECK(kinds(t.observe({task(5, 0, JobState::running, 0, 2)}), "a") == std::vector<K>{K::requeued, K::started});
  CHECK(kinds(t.observe({task(5, 0, JobState::completed, 0, 2)}), "a") == std::vector<K>{K::exited});
}

TEST_CASE("tracker: a requeue seen through COMPLETING is one requeue, then the new run", "[slurm][tracker]") {
  // A batch script that runs `scontrol requeue` and exits: squeue shows the old run COMPLETING
  // with the new restart count, then PENDING, then the new run. (Seen in CI under load as
  // started, requeued, started, requeued, started, exited.)
  Tracker t;
  t.add("a", 5, 0u);
  CHECK(kinds(t.observe({task(5, 0, JobState::running)}), "a") == std::vector<K>{K::started});
  CHECK(kinds(t.observe({task(5, 0, JobState::completing, 0, 1)}), "a") == std::vector<K>{K::requeued});
  CHECK(t.observe({task(5, 0, JobState::completing, 0, 1)}).empty());
  CHECK(t.observe({task(5, 0, JobState::pending, 0, 1)}).empty());  // the same requeue, not another
  CHECK(kinds(t.observe({task(5, 0, JobState::running, 0, 1)}), "a") == std::vector<K>{K::started});
  CHECK(kinds(t.observe({task(5, 0, JobState::completed, 0, 1)}), "a") == std::vector<K>{K::exited});
  // A run first seen COMPLETING is reported started by its final record.
  Tracker u;
  u.add("b", 6, 0u);
  CHECK(u.observe({task(6, 0, JobState::completing)}).empty());
  CHECK(kinds(u.observe({task(6, 0, JobState::completed)}), "b") == std::vector<K>{K::started, K::exited});
}

TEST_CASE("tracker: terminal states and their messages", "[slurm][tracker]") {
  auto end = [](JobState st, int ws = 0, std::string reason = "") {
    JobRecord r = task(1, 0, st, ws);
    r.reason = std::move(reason);
    return Tracker::terminal_change(r, false);
  };
  CHECK(end(JobState::timeout).kind == K::cancelled);
  CHECK_THAT(end(JobState::timeout).message, Catch::Contains("time limit (TIMEOUT)"));
  CHECK(end(JobState::node_fail).kind == K::lost);
  CHECK_THAT(end(JobState::node_fail).message, Catch::Contains("NODE_FAIL"));
  CHECK(end(JobState::preempted).kind == K::lost);
  CHECK_THAT(end(JobState::preempted).message, Catch::Contains("preempted"));
  CHECK(end(JobState::out_of_memory).kind == K::exited);
  CHECK(end(JobState::out_of_memory).signal == 9);
  CHECK_THAT(end(JobState::out_of_memory).message, Catch::Contains("out of memory"));
  CHECK(end(JobState::failed, 9, "JobLaunchFailure").kind == K::lost);
  CHECK(end(JobState::cancelled, 15).kind == K::cancelled);
  CHECK_THAT(end(JobState::cancelled, 15).message, Catch::Contains("outside dlsweep"));
  JobRecord r = task(1, 0, JobState::cancelled, 15);
  CHECK(Tracker::terminal_change(r, true).message == "cancelled");
}

TEST_CASE("tracker: a job cancelled while pending is not reported as started", "[slurm][tracker]") {
  Tracker t;
  t.add("a", 5, 0u);
  t.add("b", 5, 1u);
  t.cancel_requested("a");
  t.cancel_requested("b");
  t.observe({meta(5, {0, 1})});
  // Slurm drops pending array tasks it cancels: b is simply gone, a shows CANCELLED.
  auto c = t.observe({task(5, 0, JobState::cancelled)});
  CHECK(kinds(c, "a") == std::vector<K>{K::cancelled});
  CHECK(t.missing_native_ids() == std::vector<std::string>{"5_1"});
  auto acct = t.observe_accounting({});
  CHECK(kinds(acct, "b") == std::vector<K>{K::cancelled});
}

TEST_CASE("tracker: missing jobs go to accounting, then are lost after N polls", "[slurm][tracker]") {
  Tracker t(2);
  t.add("a", 5, 0u);
  t.add("p", 9, std::nullopt);
  t.observe({task(5, 0, JobState::running)});
  CHECK(t.observe({}).empty());
  auto missing = t.missing_native_ids();
  CHECK(missing == std::vector<std::string>{"5_0", "105", "9"});  // own id known for a: sacct -c knows only that
  // sacct -c answers by own id.
  JobRecord by_own;
  by_own.job_id = 105;
  by_own.state = JobState::completed;
  by_own.state_name = "COMPLETED";
  auto c = t.observe_accounting({by_own});
  CHECK(kinds(c, "a") == std::vector<K>{K::exited});
  CHECK(kinds(c, "p").empty());  // first miss
  CHECK(t.observe({}).empty());
  auto c2 = t.observe_accounting({}, false);
  CHECK(kinds(c2, "p") == std::vector<K>{K::lost});
  CHECK_THAT(c2[0].message, Catch::Contains("vanished from the controller"));
}

TEST_CASE("tracker: a job seen again resets its missing count", "[slurm][tracker]") {
  Tracker t(2);
  t.add("p", 9, std::nullopt);
  JobRecord running;
  running.job_id = 9;
  running.state = JobState::running;
  t.observe({});
  t.observe_accounting({});
  t.observe({running});
  t.observe({});
  CHECK(t.observe_accounting({}).empty());  // one miss since it was last seen
}

namespace {

JobRecord waiting(JobState st, std::string reason, std::string detail = "", int restarts = 0) {
  JobRecord r = task(5, 0, st, 0, restarts);
  r.reason = std::move(reason);
  r.reason_detail = std::move(detail);
  return r;
}

}  // namespace

TEST_CASE("tracker: a waiting task reports squeue's reason each time it changes", "[slurm][tracker][pending]") {
  Tracker t;
  t.add("a", 5, 0u);
  CHECK(t.observe({waiting(JobState::pending, "None")}).empty());  // no reason yet: nothing to say
  auto c = t.observe({waiting(JobState::pending, "Priority")});
  REQUIRE(kinds(c, "a") == std::vector<K>{K::pending});
  CHECK(c[0].message == "Priority");
  CHECK(c[0].pending_class == PendingClass::routine);
  CHECK_FALSE(c[0].cancel);
  CHECK(t.observe({waiting(JobState::pending, "Priority")}).empty());  // once per change
  c = t.observe({waiting(JobState::pending, "Resources",
                         "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions")});
  REQUIRE(kinds(c, "a") == std::vector<K>{K::pending});
  CHECK_THAT(c[0].message, Catch::StartsWith("Nodes required for job are DOWN, DRAINED"));
  CHECK(c[0].pending_class == PendingClass::notable);
  CHECK(kinds(t.observe({waiting(JobState::running, "None")}), "a") == std::vector<K>{K::started});
  // Requeued: the reason of the new wait is news again.
  c = t.observe({waiting(JobState::pending, "BeginTime", "", 1)});
  CHECK(kinds(c, "a") == std::vector<K>{K::requeued, K::pending});
  CHECK(c[1].message == "BeginTime");
}

TEST_CASE("tracker: a task held after a failed launch is cancelled and ends lost, not requeued",
          "[slurm][tracker][pending]") {
  const auto held = waiting(JobState::pending, "JobHeldUser", "launch failed requeued held", 1);
  SECTION("the cancel lands: CANCELLED") {
    Tracker t;
    t.add("a", 5, 0u);
    auto c = t.observe({held});
    REQUIRE(kinds(c, "a") == std::vector<K>{K::pending});  // no `requeued`: it never ran
    CHECK(c[0].cancel);
    CHECK(c[0].pending_class == PendingClass::notable);
    CHECK(c[0].message == "launch failed requeued held");
    CHECK(t.observe({held}).empty());  // asked once
    JobRecord gone = held;
    gone.state = JobState::cancelled;
    gone.state_name = "CANCELLED";
    c = t.observe({gone});
    REQUIRE(kinds(c, "a") == std::vector<K>{K::lost});
    CHECK(c[0].launch_failed);
    CHECK_THAT(c[0].message, Catch::Contains("could not start it and held it (launch failed requeued held)"));
    CHECK(t.live() == 0);
  }
  SECTION("the cancelled task is forgotten by squeue and accounting") {
    Tracker t;
    t.add("a", 5, 0u);
    t.observe({held});
    CHECK(t.observe({}).empty());
    auto c = t.observe_accounting({});
    REQUIRE(kinds(c, "a") == std::vector<K>{K::lost});
    CHECK(c[0].launch_failed);
  }
  SECTION("a cancel asked by the caller wins") {
    Tracker t;
    t.add("a", 5, 0u);
    t.cancel_requested("a");
    auto c = t.observe({held});
    REQUIRE(kinds(c, "a") == std::vector<K>{K::pending});
    CHECK_FALSE(c[0].cancel);
    JobRecord gone = held;
    gone.state = JobState::cancelled;
    CHECK(kinds(t.observe({gone}), "a") == std::vector<K>{K::cancelled});
  }
}

TEST_CASE("tracker: a forgotten task is not followed any more, and a later answer that still lists it is fine",
          "[slurm][tracker]") {
  // stop_following() at the end of a pool sweep forgets the workers while a poll may still
  // be in flight; its answer lists them. forget() left the key behind and observe() threw
  // (std::out_of_range from map::at), ending a finished sweep with an internal error.
  Tracker t;
  t.add("a", 5, 0);
  t.add("b", 5, 1);
  t.forget("a");
  CHECK_FALSE(t.tracked("a"));
  CHECK(t.live() == 1);
  std::vector<TaskChange> changes;
  REQUIRE_NOTHROW(changes = t.observe({task(5, 0, JobState::running), task(5, 1, JobState::running)}));
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].id == "b");
  t.forget("nobody");  // unknown: nothing
}
