// Why a Slurm job waits: squeue's reasons as captured from a real controller (a Prolog that
// fails holds the job, "launch failed requeued held", and drains the node), how dlsweep
// reads them (slurm/reason.hpp), and SlurmBackend's `pending` events and its cancel of a
// job held after a failed launch, against the in-memory controller.
#include <catch2/catch.hpp>

#include "fake_slurm_driver.hpp"
#include "schedulers/slurm/reason.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
using namespace slurm_test;
using K = JobEventKind;

namespace {

const JobRecord& by_native_id(const std::vector<JobRecord>& recs, const std::string& id) {
  for (const auto& r : recs)
    if (r.native_id() == id) return r;
  FAIL("no record " << id);
  return recs.front();
}

}  // namespace

TEST_CASE("slurm reasons: held after a failed launch, held by hand, a drained node, routine waits",
          "[slurm][pending]") {
  // Slurm 22.05.8: array 1 launched under `Prolog=/bin/false` (node drained, both tasks
  // held), job 3 `scontrol hold` as root, job 4 submitted to the drained node.
  auto recs = parse_squeue_json(sample("squeue_held_launch_failed.json"));
  REQUIRE(recs.has_value());
  const auto& held = by_native_id(*recs, "1_0");
  CHECK(held.state == JobState::pending);
  CHECK(held.reason == "JobHeldUser");
  CHECK(held.reason_detail == "launch failed requeued held");
  CHECK(held.restart_count == 1);
  CHECK(shown_reason(held) == "launch failed requeued held");
  CHECK(classify_reason(held) == PendingClass::notable);
  CHECK(held_after_failed_launch(held));
  CHECK(held_after_failed_launch(by_native_id(*recs, "1_1")));

  const auto& by_hand = by_native_id(*recs, "3");
  CHECK(shown_reason(by_hand) == "JobHeldAdmin");
  CHECK(classify_reason(by_hand) == PendingClass::notable);
  CHECK_FALSE(held_after_failed_launch(by_hand));  // a person held it: not ours to undo

  const auto& drained = by_native_id(*recs, "4");
  CHECK(drained.reason == "Resources");
  CHECK(shown_reason(drained) ==
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions");
  CHECK(classify_reason(drained) == PendingClass::notable);
  CHECK_FALSE(held_after_failed_launch(drained));

  JobRecord r;
  r.state = JobState::pending;
  for (const char* routine : {"Priority", "Resources", "BeginTime", "None", ""}) {
    r.reason = routine;
    CHECK(classify_reason(r) == PendingClass::routine);
  }
  CHECK(shown_reason(r).empty());
  r.reason = "None";
  CHECK(shown_reason(r).empty());
  r.reason = "JobArrayTaskLimit";
  CHECK(classify_reason(r) == PendingClass::throttled);
  // A site's running-job limits are capacity, like the study's own throttle (site_limit.hpp).
  for (const char* site : {"QOSMaxJobsPerUserLimit", "AssocGrpJobsLimit", "QOSGrpGRES"}) {
    r.reason = site;
    CHECK(classify_reason(r) == PendingClass::throttled);
    CHECK(shown_reason(r) == site);
  }
  for (const char* notable : {"ReqNodeNotAvail", "PartitionTimeLimit", "JobHeldUser", "JobHeldAdmin"}) {
    r.reason = notable;
    CHECK(classify_reason(r) == PendingClass::notable);
    CHECK(shown_reason(r) == notable);
  }
  r.state = JobState::running;
  r.reason_detail = "launch failed requeued held";
  CHECK_FALSE(held_after_failed_launch(r));  // running again (released): nothing to undo
}

TEST_CASE("fake slurm: pending events carry squeue's reason, once per change", "[slurm][backend][pending]") {
  FakeSlurmFixture f;
  auto ids = f.submit(2);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  f.ctl->set_reason(100, 0, "Priority");
  f.ctl->set_reason(100, 1, "ReqNodeNotAvail", "", 0);
  REQUIRE(run_until(f.io, [&] { return f.rec.pending(ids[0]).size() == 1 && f.rec.pending(ids[1]).size() == 1; }, 5));
  run_until(f.io, [] { return false; }, 0.3);  // several polls, same reasons
  REQUIRE(f.rec.pending(ids[0]).size() == 1);
  CHECK(f.rec.pending(ids[0])[0].message == "Priority");
  CHECK(f.rec.pending(ids[0])[0].pending_class == PendingClass::routine);
  CHECK(f.rec.pending(ids[0])[0].native_id == "100_0");
  CHECK(f.rec.pending(ids[1])[0].message == "ReqNodeNotAvail");
  CHECK(f.rec.pending(ids[1])[0].pending_class == PendingClass::notable);
  f.ctl->set_reason(100, 0, "Resources");
  REQUIRE(run_until(f.io, [&] { return f.rec.pending(ids[0]).size() == 2; }, 5));
  CHECK(f.rec.pending(ids[0])[1].message == "Resources");
  CHECK(f.ctl->cancels.empty());  // waiting is not failing
  f.ctl->set_all(JobState::completed);
  REQUIRE(run_until(f.io, [&] { return f.rec.all_done(ids); }, 5));
  CHECK(f.rec.kinds(ids[0]) == std::vector<K>{K::queued, K::started, K::exited});
}

TEST_CASE("fake slurm: a job held after a failed launch is cancelled and ends lost", "[slurm][backend][pending]") {
  FakeSlurmFixture f;
  auto ids = f.submit(2);
  REQUIRE(run_until(f.io, [&] { return f.queued(ids); }, 5));
  f.ctl->set_reason(100, 1, "JobHeldUser", "launch failed requeued held", 1);
  REQUIRE(run_until(f.io, [&] { return !f.ctl->cancels.empty(); }, 5));
  CHECK(f.ctl->cancels[0] == std::vector<std::string>{"100_1"});
  REQUIRE(f.rec.pending(ids[1]).size() == 1);
  CHECK(f.rec.pending(ids[1])[0].message == "launch failed requeued held");
  CHECK(f.rec.pending(ids[1])[0].pending_class == PendingClass::notable);
  CHECK_FALSE(f.rec.has(ids[1], K::requeued));
  REQUIRE_FALSE(f.logs.empty());
  CHECK_THAT(f.logs.back(), Catch::Contains("100_1") && Catch::Contains("cancelling it"));
  f.ctl->set(100, 1, JobState::cancelled, 15);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(ids[1]) != nullptr; }, 5));
  const auto* end = f.rec.terminal(ids[1]);
  CHECK(end->kind == K::lost);
  CHECK(end->launch_failed);
  CHECK_FALSE(end->cannot_start);  // a failed attempt: retried while retries remain
  CHECK_THAT(end->message, Catch::Contains("launch failed requeued held"));
  CHECK(f.rec.kinds(ids[1]) == std::vector<K>{K::queued, K::lost});
  CHECK(f.rec.terminal(ids[0]) == nullptr);  // its sibling waits on
  CHECK(f.ctl->cancels.size() == 1);
  CHECK(f.backend->active() == 1);
}
