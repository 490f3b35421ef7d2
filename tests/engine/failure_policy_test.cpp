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

TEST_CASE("fail_fast_fix: a program that cannot start points at the study file and submit --replace") {
  using dlsweep::orch::fail_fast_fix;
  const std::string missing =
      "3 trials failed the same way before any completed (exit 2: rejected its parameters, input or command line (a "
      "missing script, too); last stderr line: python3: can't open file '/tmp/x/trail.py': [Errno 2] No such file or "
      "directory)";
  auto fix = fail_fast_fix(missing, "sweep.db", "cond", "study.yaml");
  CHECK(fix.find("dlsweep --db sweep.db submit study.yaml --replace") != std::string::npos);
  CHECK(fix.find("resume cond --rerun") == std::string::npos);  // it would run the recorded wrong path again
  for (const char* why : {"3 trials failed the same way (program or script not found (exit 127))",
                          "3 trials failed the same way (the program could not be started (missing or not executable))"})
    CHECK(fail_fast_fix(why, "", "s", "").find("dlsweep submit STUDY_FILE --replace") != std::string::npos);
  // The program's own failure: fix it and resume; the study-file route is named too.
  auto prog = fail_fast_fix("3 trials failed the same way (exit code 1; last stderr line: ModuleNotFoundError: No "
                            "module named 'torchvision')",
                            "sweep.db", "cond", "study.yaml");
  CHECK(prog.starts_with("fix the program, then `dlsweep --db sweep.db resume cond --rerun failed,cancelled`"));
  CHECK(prog.find("submit study.yaml --replace") != std::string::npos);
}
