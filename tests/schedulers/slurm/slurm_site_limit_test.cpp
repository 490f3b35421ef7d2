// A site's submission limits are capacity, not failure (slurm/site_limit.hpp): recognising
// Slurm's refusals, learning the limit by halving, and the backend keeping jobs waiting —
// never `lost`, never `queued` before sbatch took them — then sending them as others end.
// The same against a real controller with a refusing sbatch: tests/e2e/slurm_limits_test.cpp.
#include <catch2/catch.hpp>

#include "common/site_limit_note.hpp"
#include "fake_slurm_driver.hpp"
#include "schedulers/slurm/plan.hpp"
#include "schedulers/slurm/site_limit.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
using namespace slurm_test;
using K = JobEventKind;

TEST_CASE("site limit: Slurm's capacity refusals are recognised, a bad request is not", "[slurm][limits]") {
  auto qos = capacity_refusal(
      "sbatch: error: QOSMaxSubmitJobPerUserLimit\nsbatch: error: Batch job submission failed: Job violates "
      "accounting/QOS policy (job submit limit, user's size and/or time limits)");
  REQUIRE(qos);
  CHECK(qos->kind == LimitKind::submit_jobs);
  CHECK(qos->reason == "QOSMaxSubmitJobPerUserLimit");
  CHECK(qos->scope == "per user");
  CHECK(capacity_refusal("sbatch: error: AssocMaxSubmitJobLimit")->reason == "AssocMaxSubmitJobLimit");
  CHECK(capacity_refusal("sbatch: error: QOSMaxSubmitJobPerAccountLimit")->scope == "per account");
  // libslurm's string for ESLURM_ACCOUNTING_POLICY (the api driver).
  CHECK(capacity_refusal("Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)")
            ->kind == LimitKind::submit_jobs);
  CHECK(capacity_refusal("sbatch: error: Batch job submission failed: Invalid job array specification")->kind ==
        LimitKind::array_size);
  CHECK(capacity_refusal("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying")->kind ==
        LimitKind::job_count);
  CHECK(capacity_refusal("sbatch: error: Batch job submission failed: Resource temporarily unavailable")->kind ==
        LimitKind::job_count);
  // Permanent refusals stay refusals (refusal.hpp explains them).
  CHECK_FALSE(capacity_refusal("sbatch: error: Batch job submission failed: Invalid partition name specified"));
  CHECK_FALSE(capacity_refusal("sbatch: error: Batch job submission failed: Requested time limit is invalid"));
  CHECK_FALSE(capacity_refusal("sbatch: error: Unable to contact slurm controller (connect failure)"));
  // Pending reasons that are the site's job-count limits.
  CHECK(capacity_pending_reason("QOSMaxJobsPerUserLimit")->scope == "per user");
  CHECK(capacity_pending_reason("AssocGrpJobsLimit"));
  CHECK_FALSE(capacity_pending_reason("Resources"));
  CHECK_FALSE(capacity_pending_reason("ReqNodeNotAvail"));
}

TEST_CASE("site limit: the limit is learned by halving and is exact after one refusal of one job", "[slurm][limits]") {
  const SiteLimit limit{LimitKind::submit_jobs, "QOSMaxSubmitJobPerUserLimit", "per user"};
  // Play a site that allows 4 whatever is tried: count the sbatch calls it takes.
  for (std::size_t site : {1u, 2u, 4u, 7u, 50u}) {
    SubmitCapacity cap(/*probe_s=*/1e9);
    std::size_t in = 0, calls = 0, waiting = 60;
    CHECK(cap.room(0, 0) == SubmitCapacity::kUnlimited);
    while (waiting > 0 && calls < 40) {
      std::size_t n = std::min(waiting, cap.room(in, 0));
      if (n == 0) break;
      ++calls;
      if (in + n > site) {
        cap.refused(limit, in, n, 0);
      } else {
        in += n;
        waiting -= n;
        cap.accepted(in);
      }
    }
    INFO("site allows " << site);
    CHECK(in == site);        // it filled the limit exactly
    CHECK(cap.exact());
    CHECK(cap.allowed() == site);
    CHECK(cap.room(in, 0) == 0);
    CHECK(calls <= 2 * 7 + 2);  // logarithmic in the first batch, not one try per job
    // Jobs end: exactly as many more go.
    CHECK(cap.room(in - 1, 0) == 1);
    if (site >= 2) CHECK(cap.room(in - 2, 0) == 2);
  }
}

TEST_CASE("site limit: after probe_s one job is tried again; an acceptance past the limit forgets it",
          "[slurm][limits]") {
  const SiteLimit limit{LimitKind::submit_jobs, "QOSMaxSubmitJobPerUserLimit", "per user"};
  SubmitCapacity cap(/*probe_s=*/60);
  cap.refused(limit, 0, 1, 100);  // the user's other jobs fill the limit: none of ours fits
  CHECK(cap.exact());
  CHECK(cap.allowed() == 0u);
  CHECK(cap.room(0, 120) == 0);
  CHECK(cap.probe_at() == Approx(160));
  CHECK(cap.room(0, 161) == 1);
  cap.accepted(1);  // the other jobs ended
  CHECK(cap.room(1, 161) == SubmitCapacity::kUnlimited);
  CHECK_FALSE(cap.allowed());
}

TEST_CASE("site limit: a limit read from the site's configuration is exact at once; the line says it",
          "[slurm][limits]") {
  const SiteLimit limit{LimitKind::submit_jobs, "QOSMaxSubmitJobPerUserLimit", "per user"};
  SubmitCapacity cap;
  cap.known(limit, 4);
  CHECK(cap.room(0, 0) == 4);
  CHECK(cap.room(3, 0) == 1);
  CHECK(dlsweep::site_limit_line(capacity_line(limit, cap.allowed()), 4, 6, dlsweep::site_limit_who("Slurm")) ==
        "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit): 4 in Slurm, 6 waiting");
  CHECK(capacity_line(limit, 1u) == "the site allows 1 job per user (QOSMaxSubmitJobPerUserLimit)");
  CHECK(capacity_line(limit, 0u) == "the site allows no more jobs per user now (QOSMaxSubmitJobPerUserLimit)");
}

TEST_CASE("site limit: sacctmgr's limits are read; the tightest wins; no accounting is no limit", "[slurm][limits]") {
  // `sacctmgr -nP show assoc ... format=MaxSubmit,GrpSubmit`, `show qos ... format=MaxSubmitPU,MaxSubmitPA,GrpSubmit`.
  auto k = parse_sacctmgr_limits("|\n", "4||\n");
  REQUIRE(k);
  CHECK(k->jobs == 4);
  CHECK(k->limit.reason == "QOSMaxSubmitJobPerUserLimit");
  k = parse_sacctmgr_limits("20|\n3|\n", "4||50\n");  // two associations (accounts): the tighter
  REQUIRE(k);
  CHECK(k->jobs == 3);
  CHECK(k->limit.reason == "AssocMaxSubmitJobLimit");
  CHECK_FALSE(parse_sacctmgr_limits("|\n", "||\n"));
  CHECK_FALSE(parse_sacctmgr_limits("", ""));
  CHECK_FALSE(parse_sacctmgr_limits("", "sacctmgr: error: Problem talking to the database\n"));
  CHECK_FALSE(parse_sacctmgr_limits("", "-1||\n"));
}

TEST_CASE("site limit: plan_arrays cuts arrays to the room the site gives", "[slurm][limits]") {
  std::vector<WaitingJob> w;
  for (int i = 0; i < 10; ++i) w.push_back({"j" + std::to_string(i), Shape{"s", 1, 0, "", true}});
  auto plan = plan_arrays(w, /*max_concurrent=*/8, /*live=*/0, /*max_array=*/1001, /*room=*/4);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].ids.size() == 4);
  CHECK(plan[0].ids.front() == "j0");
  CHECK(plan_arrays(w, 8, 0, 1001, 0).empty());
  // With a small MaxArraySize the room spans arrays.
  plan = plan_arrays(w, 8, 0, 3, 5);
  REQUIRE(plan.size() == 2);
  CHECK(plan[0].ids.size() == 3);
  CHECK(plan[1].ids.size() == 2);
}

TEST_CASE("fake slurm: under a submit limit of 4, ten jobs wait, never more than 4 in Slurm, none lost",
          "[slurm][backend][limits]") {
  FakeSlurmFixture f(/*max_concurrent=*/10);
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->submit_limit = 4;
  }
  auto ids = f.submit(10);
  auto queued = [&] {
    std::size_t n = 0;
    for (auto& id : ids) n += f.rec.has(id, K::queued);
    return n;
  };
  REQUIRE(run_until(f.io, [&] { return f.backend->capacity_note() != "" && queued() == 4; }, 5));
  CHECK(f.backend->capacity_note() == "the site allows 4 jobs per user (QOSMaxSubmitJobPerUserLimit)");
  run_until(f.io, [] { return false; }, 0.2);
  CHECK(queued() == 4);  // `queued` only for what sbatch took, and no more goes out
  for (auto& id : ids) CHECK_FALSE(f.rec.terminal(id));
  CHECK(f.backend->stats().capacity_refusals >= 1);
  // Jobs end: the rest go out as room appears, the limit is never passed.
  for (int round = 0; round < 10 && !f.rec.all_done(ids); ++round) {
    f.ctl->set_all(JobState::completed);
    run_until(f.io, [&] { return f.rec.all_done(ids); }, 0.5);
  }
  REQUIRE(f.rec.all_done(ids));
  for (auto& id : ids) CHECK(f.rec.terminal(id)->kind == K::exited);
  CHECK(f.ctl->most_live <= 4);
  for (const auto& line : f.logs) CHECK(line.find("scontrol ping") == std::string::npos);
}

TEST_CASE("fake slurm: a cancel of jobs held back by a down controller ends them at once", "[slurm][backend][limits]") {
  FakeSlurmFixture f;
  auto first = f.submit(1);  // MaxArraySize is read; then the controller goes down
  REQUIRE(run_until(f.io, [&] { return f.queued(first); }, 5));
  {
    std::lock_guard l(f.ctl->m);
    f.ctl->down = true;
  }
  auto ids = f.submit(3, 10);
  run_until(f.io, [] { return false; }, 0.3);  // a few failed tries; the batch waits to retry
  for (auto& id : ids) f.backend->cancel(id);
  REQUIRE(run_until(f.io, [&] { return f.rec.all_done(ids); }, 2));
  for (auto& id : ids) CHECK(f.rec.terminal(id)->kind == K::cancelled);
  CHECK(f.backend->active() == 1);  // the first job only
}
