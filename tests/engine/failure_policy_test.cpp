// What a trial's end means: which failures are retried (README, "Failures and retries")
// and when a clean exit is no result.
#include <catch2/catch.hpp>

#include "common/exit_codes.hpp"
#include "engine/failure_policy.hpp"

using dlsweep::orch::classify_failure;
using dlsweep::orch::missing_objective;
using K = dlsweep::sched::JobEventKind;
namespace trial_exit = dlsweep::exit_codes::trial;

TEST_CASE("deterministic failures are not retried: bad params, divergence, missing program") {
  CHECK_FALSE(classify_failure(K::exited, trial_exit::bad_input, 0, false).retry);
  CHECK_FALSE(classify_failure(K::exited, trial_exit::diverged, 0, false).retry);
  CHECK_FALSE(classify_failure(K::exited, trial_exit::not_found, 0, false).retry);
  CHECK_FALSE(classify_failure(K::exited, trial_exit::not_executable, 0, false).retry);
  CHECK_FALSE(classify_failure(K::lost, 0, 0, /*cannot_start=*/true).retry);
  CHECK(classify_failure(K::exited, trial_exit::diverged, 0, false).why.find("diverged") != std::string::npos);
}

TEST_CASE("what may be transient is retried: signals, lost jobs, the scheduler's cancel, other exit codes") {
  CHECK(classify_failure(K::exited, 0, 9, false).retry);          // killed (OOM killer, node reboot)
  CHECK(classify_failure(K::exited, 3, 15, false).retry);         // a signal wins over the code
  CHECK(classify_failure(K::lost, 0, 0, false).retry);            // node failure, job vanished
  CHECK(classify_failure(K::cancelled, 0, 0, false).retry);       // time limit, preemption
  CHECK(classify_failure(K::exited, trial_exit::stopped, 0, false).retry);
  CHECK(classify_failure(K::exited, trial_exit::failure, 0, false).retry);
  CHECK(classify_failure(K::exited, 7, 0, false).why == "exit code 7");
}

TEST_CASE("a clean exit without the objective metric is a failure that names what was reported") {
  CHECK_FALSE(missing_objective("val_acc", {"val_acc", "loss"}));
  auto m = missing_objective("val_acc", {"loss", "acc"});
  REQUIRE(m);
  CHECK(*m == "objective val_acc was never reported (it reported: acc, loss)");
  auto none = missing_objective("val_acc", {});
  REQUIRE(none);
  CHECK(none->find("never reported") != std::string::npos);
}
