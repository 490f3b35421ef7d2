// The pilot pool backend's decisions (schedulers/slurm/pool_decide.hpp) on snapshots written
// by hand: no pool directory, no Slurm, no event loop. Each case names the exact steps, events
// and messages the backend carries out and the engine hears.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "schedulers/slurm/pool_decide.hpp"

using namespace dlsweep;
using namespace dlsweep::sched;
using namespace dlsweep::sched::pool;
using K = JobEventKind;
using A = ScanAction::Kind;

namespace Catch {
template <>
struct StringMaker<Event> {
  static std::string convert(const Event& e) {
    return fmt::format("{{{}, \"{}\", exit {}, signal {}{}{}}}", to_string(e.kind), e.message, e.exit_code, e.signal,
                       e.launch_failed ? ", launch_failed" : "", e.cannot_start ? ", cannot_start" : "");
  }
};
}  // namespace Catch

namespace {

const std::string kT1 = task_tag(1, 0), kT2 = task_tag(2, 0), kT3 = task_tag(3, 0), kT4 = task_tag(4, 0);

TaskView task(const std::string& tag, bool started = false, bool cancel_requested = false, double timeout_s = 0) {
  return TaskView{tag, started, cancel_requested, timeout_s, {}};
}

ClaimView claim(const std::string& worker, const std::string& tag, bool run, bool cancel = false) {
  return ClaimView{Claim{worker, tag, run, false, cancel}, std::nullopt, {}, std::nullopt};
}

ClaimView ended(const std::string& worker, const std::string& tag, const ExitRecord& rec, bool run = true) {
  return ClaimView{Claim{worker, tag, run, true, false}, rec, {}, std::nullopt};
}

ExitRecord exit_rec(int code, double seconds = 2.5) {
  ExitRecord r;
  r.exit_code = code;
  r.seconds = seconds;
  return r;
}

/// One tracked task (started or not) with one claim: the only step decide_scan takes.
ScanAction only_step(const Snapshot& s) {
  const ScanPlan plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 1);
  return plan.actions.front();
}

Snapshot one(TaskView t, ClaimView c) {
  Snapshot s;
  s.tasks = {std::move(t)};
  s.claims = {std::move(c)};
  return s;
}

}  // namespace

TEST_CASE("pool decide: a run seen for the first time is `started` on its worker, named with its Slurm job once known",
          "[pool][decide]") {
  Snapshot s;
  s.tasks = {task(kT1), task(kT2), task(kT3, /*started=*/true)};
  s.workers = {WorkerView{1, "1234", false}, WorkerView{2, "", false}};
  s.claims = {claim("w1", kT1, true), claim("w2", kT2, true), claim("w1", kT3, true), claim("w1", kT4, true),
              claim("w2", "t00000009-a0", false)};
  const ScanPlan plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 2);  // t3 was seen before; t4 is not this orchestrator's; t9 has no run
  CHECK(plan.changed);
  CHECK(plan.actions[0].kind == A::start);
  CHECK(plan.actions[0].tag == kT1);
  CHECK(plan.actions[0].worker == "w1");
  CHECK(plan.actions[0].events == std::vector<Event>{{K::started, "running on worker w1 (Slurm job 1234)"}});
  CHECK(plan.actions[1].kind == A::start);
  CHECK(plan.actions[1].events == std::vector<Event>{{K::started, "running on worker w2"}});

  // Nothing new: nothing to do, and the polling may back off.
  s.tasks = {task(kT1, true), task(kT2, true), task(kT3, true)};
  const ScanPlan quiet = decide_scan(s);
  CHECK(quiet.actions.empty());
  CHECK_FALSE(quiet.changed);
}

TEST_CASE("pool decide: exit records end the trial as they say, with `started` first when no look saw it run",
          "[pool][decide]") {
  SECTION("exit 0: exited, and the longest trial so far grows") {
    Snapshot s = one(task(kT1, true), ended("w1", kT1, exit_rec(0, 2.5)));
    s.longest_s = 1.0;
    const ScanAction a = only_step(s);
    CHECK(a.kind == A::retire);
    CHECK(a.worker == "w1");
    CHECK(a.events == std::vector<Event>{{K::exited, "ended on worker w1 after 2.5 s", 0, 0}});
    REQUIRE(a.estimate_s);
    CHECK(*a.estimate_s == 2.5);
    s.longest_s = 3.0;
    CHECK_FALSE(only_step(s).estimate_s);  // shorter than the longest: the estimate stays
  }
  SECTION("never seen running: `started` comes before its end") {
    const ScanAction a = only_step(one(task(kT1), ended("w2", kT1, exit_rec(0, 0.3))));
    CHECK(a.kind == A::retire);
    CHECK(a.events == std::vector<Event>{{K::started, "running on worker w2"},
                                         {K::exited, "ended on worker w2 after 0.3 s", 0, 0}});
  }
  SECTION("a non-zero exit and a signal: exited with them, no estimate") {
    ScanAction a = only_step(one(task(kT1, true), ended("w1", kT1, exit_rec(3, 4.0))));
    CHECK(a.events == std::vector<Event>{{K::exited, "ended on worker w1 after 4.0 s", 3, 0}});
    CHECK_FALSE(a.estimate_s);
    ExitRecord sig = exit_rec(0, 4.0);
    sig.signal = 9;
    a = only_step(one(task(kT1, true), ended("w1", kT1, sig)));
    CHECK(a.events == std::vector<Event>{{K::exited, "ended on worker w1 after 4.0 s", 0, 9}});
    CHECK_FALSE(a.estimate_s);
  }
  SECTION("cancelled by the worker, or cancel asked: cancelled") {
    ExitRecord r = exit_rec(75, 9.0);
    r.cancelled = true;
    ScanAction a = only_step(one(task(kT1, true), ended("w1", kT1, r)));
    CHECK(a.kind == A::retire);
    CHECK(a.events == std::vector<Event>{{K::cancelled, "cancelled"}});
    CHECK_FALSE(a.estimate_s);
    a = only_step(one(task(kT1, true, /*cancel_requested=*/true), ended("w1", kT1, exit_rec(0))));
    CHECK(a.events == std::vector<Event>{{K::cancelled, "cancelled"}});
  }
  SECTION("timed out: cancelled, naming the trial's timeout") {
    ExitRecord r = exit_rec(0, 30.4);
    r.timed_out = true;
    const ScanAction a = only_step(one(task(kT1, true, false, 30), ended("w1", kT1, r)));
    CHECK(a.kind == A::retire);
    CHECK(a.events == std::vector<Event>{{K::cancelled, "timed out after 30 s"}});
    CHECK_FALSE(a.estimate_s);
  }
  SECTION("not started: lost, a failed launch with the worker's reason") {
    ExitRecord r = exit_rec(127, 0);
    r.not_started = true;
    r.error = "exec /x/run.sh: No such file or directory";
    const ScanAction a = only_step(one(task(kT1), ended("w3", kT1, r, /*run=*/false)));
    CHECK(a.kind == A::retire);
    Event lost{K::lost, "worker w3 could not start the trial's script: exec /x/run.sh: No such file or directory"};
    lost.launch_failed = true;
    CHECK(a.events == std::vector<Event>{{K::started, "running on worker w3"}, lost});
  }
}

TEST_CASE("pool decide: stopped with a checkpoint at the time-limit warning goes back to the queue; a cancel wins",
          "[pool][decide]") {
  ExitRecord r = exit_rec(75, 50);
  r.warned = true;
  ScanAction a = only_step(one(task(kT1, true), ended("w2", kT1, r)));
  CHECK(a.kind == A::requeue);
  CHECK(a.worker == "w2");
  CHECK(a.events ==
        std::vector<Event>{{K::requeued, "stopped with a checkpoint at worker w2's time-limit warning: back in the "
                                         "pool's queue"}});
  CHECK_FALSE(a.estimate_s);

  // The engine asked for a cancel meanwhile: it ends, it is not resumed.
  a = only_step(one(task(kT1, true, /*cancel_requested=*/true), ended("w2", kT1, r)));
  CHECK(a.kind == A::retire);
  CHECK(a.events == std::vector<Event>{{K::cancelled, "cancelled"}});
  // Warned but another exit status (no checkpoint): it ended.
  a = only_step(one(task(kT1, true), ended("w2", kT1, [&] {
                      ExitRecord e = r;
                      e.exit_code = 1;
                      return e;
                    }())));
  CHECK(a.kind == A::retire);
  CHECK(a.events == std::vector<Event>{{K::exited, "ended on worker w2 after 50.0 s", 1, 0}});
}

TEST_CASE("pool decide: a damaged exit record is said, not finished; the claim reads on as if it had none",
          "[pool][decide]") {
  ClaimView c{Claim{"w1", kT1, true, true, false}, std::nullopt, "w1/t00000001-a0/exit: not a pool record",
              std::nullopt};
  Snapshot s = one(task(kT1), c);
  ScanPlan plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 2);
  CHECK(plan.actions[0].kind == A::log);
  CHECK(plan.actions[0].tag == kT1);
  CHECK(plan.actions[0].message == "w1/t00000001-a0/exit: not a pool record");
  CHECK(plan.actions[0].events.empty());
  CHECK(plan.actions[1].kind == A::start);  // its run is still news
  CHECK(plan.changed);
  // Seen running already: only the log, which changes nothing (the backend says it once per tag).
  s.tasks = {task(kT1, true)};
  plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 1);
  CHECK(plan.actions[0].kind == A::log);
  CHECK_FALSE(plan.changed);
}

TEST_CASE("pool decide: a cancel asked is written for the worker while its cancel file is not there",
          "[pool][decide]") {
  ScanAction a = only_step(one(task(kT1, true, true), claim("w2", kT1, true)));
  CHECK(a.kind == A::request_cancel);
  CHECK(a.worker == "w2");
  CHECK(a.tag == kT1);
  CHECK(decide_scan(one(task(kT1, true, true), claim("w2", kT1, true, /*cancel=*/true))).actions.empty());
  // Claimed but not running yet: it is `started` when seen, and the cancel asked as well.
  const ScanPlan plan = decide_scan(one(task(kT1, false, true), claim("w2", kT1, true)));
  REQUIRE(plan.actions.size() == 2);
  CHECK(plan.actions[0].kind == A::start);
  CHECK(plan.actions[1].kind == A::request_cancel);
}

TEST_CASE("pool decide: a task claimed twice is decided once per claim, each seeing the earlier steps",
          "[pool][decide]") {
  // Ended under w1: the claim under w2 is not this orchestrator's any more.
  Snapshot s;
  s.tasks = {task(kT1, true)};
  s.claims = {ended("w1", kT1, exit_rec(0, 5)), ended("w2", kT1, exit_rec(0, 6))};
  ScanPlan plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 1);
  CHECK(plan.actions[0].worker == "w1");
  CHECK(*plan.actions[0].estimate_s == 5);

  // Requeued under w1 (started is false again), then seen running under w2: started there.
  ExitRecord warned = exit_rec(75, 5);
  warned.warned = true;
  s.claims = {ended("w1", kT1, warned), claim("w2", kT1, true)};
  plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 2);
  CHECK(plan.actions[0].kind == A::requeue);
  CHECK(plan.actions[1].kind == A::start);
  CHECK(plan.actions[1].events == std::vector<Event>{{K::started, "running on worker w2"}});

  // Two clean ends in one look: the estimate grows past the first.
  s.tasks = {task(kT1, true), task(kT2, true)};
  s.claims = {ended("w1", kT1, exit_rec(0, 5)), ended("w2", kT2, exit_rec(0, 4)), ended("w2", kT3, exit_rec(0, 9))};
  plan = decide_scan(s);
  REQUIRE(plan.actions.size() == 2);
  CHECK(*plan.actions[0].estimate_s == 5);
  CHECK_FALSE(plan.actions[1].estimate_s);  // 4 s: shorter than the 5 s just recorded
}

TEST_CASE("pool decide: an ended worker's tasks go back to the queue: started requeued, cancel asked cancelled, "
          "unstarted silently; a live worker's untouched",
          "[pool][decide]") {
  Snapshot s;
  s.tasks = {task(kT1, true), task(kT2, true, true), task(kT3)};
  s.claims = {claim("w1", kT1, true),       claim("w1", kT2, true, true), claim("w1", kT3, false),
              claim("w1", "t00000008-a0", true), ended("w1", kT4, exit_rec(0)), claim("w2", "t00000005-a0", true)};
  s.tasks.push_back(task(kT4, true));
  s.tasks.push_back(task("t00000005-a0", true));
  const auto backs = decide_reclaim(s, "w1", "Slurm job 77, signal 9");
  REQUIRE(backs.size() == 4);  // not t4 (its exit record is its end), not w2's

  const std::string requeued_msg =
      "worker w1 ended (Slurm job 77, signal 9): back in the pool's queue, to resume from its checkpoint";
  CHECK(backs[0].tag == kT1);
  CHECK(backs[0].worker == "w1");
  CHECK(backs[0].tracked);
  CHECK_FALSE(backs[0].if_withdrawn);
  REQUIRE(backs[0].requeued);
  CHECK(*backs[0].requeued == Event{K::requeued, requeued_msg});

  CHECK(backs[1].tag == kT2);
  REQUIRE(backs[1].if_withdrawn);
  CHECK(*backs[1].if_withdrawn == Event{K::cancelled, "cancelled (its worker ended first)"});
  REQUIRE(backs[1].requeued);  // if a worker took it again before the withdrawal
  CHECK(*backs[1].requeued == Event{K::requeued, requeued_msg});

  CHECK(backs[2].tag == kT3);
  CHECK(backs[2].tracked);
  CHECK_FALSE(backs[2].if_withdrawn);
  CHECK_FALSE(backs[2].requeued);

  CHECK(backs[3].tag == "t00000008-a0");  // not this orchestrator's: put back all the same
  CHECK_FALSE(backs[3].tracked);
  CHECK_FALSE(backs[3].requeued);

  CHECK(decide_reclaim(s, "w3", "gone").empty());
}

TEST_CASE("pool decide: a worker whose allocation Slurm requeued: its started tasks are `requeued` and stay with it; "
          "the earlier run's record does not start them again, the restarted worker's new run does",
          "[pool][decide]") {
  const RunRecord old_run{"node1", 4242, 1000.5, "leases/w1.t1"}, new_run{"node2", 5151, 1090.25, "leases/w1.t1b"};
  auto with_run = [](ClaimView c, const RunRecord& r) {
    c.run = r;
    return c;
  };
  Snapshot s;
  s.workers = {WorkerView{1, "77", false}, WorkerView{2, "78", false}};
  TaskView t1 = task(kT1, /*started=*/true);
  t1.seen_run = run_key(old_run);
  s.tasks = {t1, task(kT2), task(kT3), task(kT4, /*started=*/true), task("t00000005-a0", /*started=*/true)};
  s.claims = {claim("w1", kT1, true),
              with_run(claim("w1", kT2, true), old_run),  // began, no look saw it yet
              claim("w1", kT3, false),                    // taken, never started
              ended("w1", kT4, exit_rec(0)),              // ended: a look reports it
              claim("w2", "t00000005-a0", true),          // another worker's
              claim("w1", "t00000009-a0", true)};         // not this orchestrator's
  const auto steps = decide_worker_requeued(s, "w1", "requeued by Slurm (restart 1)");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].tag == kT1);
  CHECK(steps[0].seen_run.empty());  // kept as it was: its start's run
  REQUIRE(steps[0].requeued);
  CHECK(*steps[0].requeued ==
        Event{K::requeued,
              "the allocation of worker w1 (Slurm job 77) was requeued by Slurm (restart 1): the trial runs again from "
              "its checkpoint when the worker restarts"});
  CHECK(steps[1].tag == kT2);
  CHECK(steps[1].seen_run == run_key(old_run));
  CHECK_FALSE(steps[1].requeued);
  CHECK(decide_worker_requeued(s, "w3", "x").empty());
  CHECK(decide_worker_requeued(s, "w1", "").at(0).requeued->message.find("was requeued by Slurm: ") !=
        std::string::npos);

  // Carried out (started = false, seen_run kept): the earlier run's record, still in the
  // worker's directory until the restarted worker takes the task back, starts nothing...
  Snapshot after;
  after.workers = s.workers;
  TaskView t = task(kT1);
  t.seen_run = run_key(old_run);
  after.tasks = {t};
  after.claims = {with_run(claim("w1", kT1, true), old_run)};
  CHECK(decide_scan(after).actions.empty());
  after.claims = {claim("w1", kT1, true)};  // unread (being rewritten): the next look reads it
  CHECK(decide_scan(after).actions.empty());
  after.claims = {claim("w1", kT1, false)};  // taken back: no run yet
  CHECK(decide_scan(after).actions.empty());
  // ... the new run starts it, and is remembered as the run seen.
  after.claims = {with_run(claim("w1", kT1, true), new_run)};
  const ScanAction a = only_step(after);
  CHECK(a.kind == A::start);
  CHECK(a.run == run_key(new_run));
  CHECK(a.events == std::vector<Event>{{K::started, "running on worker w1 (Slurm job 77)"}});
  // A first start remembers its run too (it is what a later requeue compares with).
  const ScanAction first = only_step(one(task(kT2), with_run(claim("w1", kT2, true), old_run)));
  CHECK(first.kind == A::start);
  CHECK(first.run == run_key(old_run));
  CHECK(run_key(old_run) != run_key(new_run));
  CHECK(run_key(old_run) != run_key(RunRecord{"node1", 4242, 1000.75, "leases/w1.t1"}));
}

TEST_CASE("pool decide: min(workers, tasks) workers alive, ended ones replaced", "[pool][decide]") {
  Snapshot s;
  s.workers_wanted = 3;
  s.tasks = {task(kT1), task(kT2)};
  WorkerPlan p = decide_workers(s);
  CHECK(p.live == 0);
  CHECK(p.start == 2);
  CHECK_FALSE(p.give_up);
  CHECK_FALSE(p.end_waiting);

  s.tasks = {task(kT1), task(kT2), task(kT3), task(kT4)};
  CHECK(decide_workers(s).start == 3);
  s.workers = {WorkerView{1, "11", true}, WorkerView{2, "12", false}, WorkerView{3, "", false}};
  p = decide_workers(s);
  CHECK(p.live == 2);
  CHECK(p.start == 1);  // w1 ended: replaced
  s.workers.push_back(WorkerView{4, "14", false});
  CHECK(decide_workers(s).start == 0);
  s.tasks.clear();
  CHECK(decide_workers(s).start == 0);
  CHECK_FALSE(decide_workers(s).give_up);
}

TEST_CASE("pool decide: after kMaxFailedWorkers failed in a row none is started; with none alive the waiting end "
          "lost", "[pool][decide]") {
  Snapshot s;
  s.workers_wanted = 2;
  s.tasks = {task(kT1), task(kT2)};
  s.workers = {WorkerView{1, "11", true}, WorkerView{2, "12", true}, WorkerView{3, "13", true}};
  s.last_failure = "worker w3 (Slurm job 13) ended: exit 127; its log: /p/w/w3/stderr.log";
  s.failed_in_a_row = kMaxFailedWorkers - 1;
  CHECK(decide_workers(s).start == 2);

  s.failed_in_a_row = kMaxFailedWorkers;
  WorkerPlan p = decide_workers(s);
  CHECK(p.start == 0);
  REQUIRE(p.give_up);
  const std::string reason =
      "backend.workers: 3 workers in a row failed; the last: worker w3 (Slurm job 13) ended: exit 127; its log: "
      "/p/w/w3/stderr.log (fix: read the worker's log, fix the cause (backend.setup, the dlsweep binary's path on "
      "the compute nodes), then `dlsweep resume`)";
  CHECK(p.give_up->message() == reason);
  REQUIRE(p.end_waiting);
  Event lost{K::lost, "cannot run a pilot worker: " + reason};
  lost.cannot_start = true;
  CHECK(*p.end_waiting == lost);

  // One worker still alive: it goes on with the queue; no more are started, nothing ends.
  s.workers.push_back(WorkerView{4, "14", false});
  p = decide_workers(s);
  CHECK(p.live == 1);
  CHECK(p.start == 0);
  CHECK(p.give_up);
  CHECK_FALSE(p.end_waiting);

  // A worker that cannot even be submitted: the same, with the submit's error.
  p = after_failed_start(0, Error{"sbatch: error: invalid account", "slurm", ""});
  REQUIRE(p.end_waiting);
  CHECK(p.end_waiting->message == "cannot run a pilot worker: slurm: sbatch: error: invalid account");
  CHECK(p.end_waiting->cannot_start);
  CHECK_FALSE(after_failed_start(2, Error{"refused", "", ""}).end_waiting);
}

TEST_CASE("pool decide: a worker's end counts as a failure when it exits non-zero, by a signal, or is lost",
          "[pool][decide]") {
  auto ev = [](K kind, int code, int sig, std::string message = {}) {
    return job_event("slurm-1", 3, 0, kind, std::move(message), "", code, sig);
  };
  WorkerEnd e = decide_worker_end(ev(K::exited, 0, 0), "77", "/p/w/w3/stderr.log");
  CHECK(e.why == "Slurm job 77, exit 0");
  CHECK_FALSE(e.failed);
  CHECK(e.failure.empty());
  CHECK(e.failed_in_a_row(2) == 0);  // a clean end breaks the run

  e = decide_worker_end(ev(K::exited, 1, 0), "77", "/p/w/w3/stderr.log");
  CHECK(e.why == "Slurm job 77, exit 1");
  CHECK(e.failed);
  CHECK(e.failed_in_a_row(2) == 3);
  CHECK(e.failure == "worker w3 (Slurm job 77) ended: exit 1; its log: /p/w/w3/stderr.log");

  e = decide_worker_end(ev(K::exited, 0, 9), "77", "/l");
  CHECK(e.why == "Slurm job 77, signal 9");
  CHECK(e.failed);

  e = decide_worker_end(ev(K::lost, 0, 0, "NODE_FAIL"), "77", "/l");
  CHECK(e.why == "Slurm job 77, lost: NODE_FAIL");
  CHECK(e.failed);
  CHECK(e.failure == "worker w3 (Slurm job 77) ended: lost: NODE_FAIL; its log: /l");

  e = decide_worker_end(ev(K::cancelled, 0, 0), "77", "/l");
  CHECK(e.why == "Slurm job 77, cancelled");
  CHECK_FALSE(e.failed);
  CHECK(e.failed_in_a_row(1) == 0);
}

TEST_CASE("pool decide: a task adopted on resume that had already ended is told as it ended", "[pool][decide]") {
  ExitRecord r = exit_rec(4);
  r.signal = 0;
  CHECK(decide_adopted_end(r, 0) ==
        std::vector<Event>{{K::started, "ran on a worker"}, {K::exited, "ended on a worker", 4, 0}});
  r.cancelled = true;
  CHECK(decide_adopted_end(r, 0) == std::vector<Event>{{K::started, "ran on a worker"}, {K::cancelled, "cancelled"}});
  r.cancelled = false;
  r.timed_out = true;
  CHECK(decide_adopted_end(r, 12) ==
        std::vector<Event>{{K::started, "ran on a worker"}, {K::cancelled, "timed out after 12 s"}});
  r.not_started = true;
  r.error = "no such file";
  Event lost{K::lost, "a worker could not start the trial's script: no such file"};
  lost.launch_failed = true;
  CHECK(decide_adopted_end(r, 12) == std::vector<Event>{{K::started, "ran on a worker"}, lost});
}

TEST_CASE("pool decide: worker ids", "[pool][decide]") {
  CHECK(worker_number("w12") == 12);
  CHECK(worker_id(12) == "w12");
  CHECK_FALSE(worker_number("w"));
  CHECK_FALSE(worker_number("x1"));
  CHECK_FALSE(worker_number("w1x"));
}

TEST_CASE("pool decide: on resume, a claim of a worker not alive goes back to the queue; the others are listed",
          "[pool][decide]") {
  auto d = decide_resume_claim(Claim{"w1", kT1, true, false, false}, /*worker_alive=*/false);
  CHECK(d.put_back);
  d = decide_resume_claim(Claim{"w1", kT1, true, true, false}, false);  // ended: reported, not rerun
  CHECK_FALSE(d.put_back);
  CHECK(d.state == "ENDED");
  CHECK(d.ended);
  d = decide_resume_claim(Claim{"w1", kT1, true, false, false}, true);
  CHECK_FALSE(d.put_back);
  CHECK(d.state == "RUNNING");
  CHECK_FALSE(d.ended);
  d = decide_resume_claim(Claim{"w1", kT1, false, false, false}, true);
  CHECK(d.state == "PENDING");
}
