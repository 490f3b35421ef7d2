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

TEST_CASE("failure_message_shape: a trial's own paths and numbers are taken out, its words are kept", "[fail_fast]") {
  using dlsweep::orch::failure_message_shape;
  // The same cause in two trials: only the trial directory and numbers differ.
  const std::string a =
      "dlsweep-train: /home/u/projA/runs/gpu/trial-0003/params.json: device: device cuda cannot run: no CUDA "
      "device (fix: use device: cpu)";
  const std::string b =
      "dlsweep-train: /home/u/projA/runs/gpu/trial-0007/params.json: device: device cuda cannot run: no CUDA "
      "device (fix: use device: cpu)";
  CHECK(failure_message_shape(a) == failure_message_shape(b));
  CHECK(failure_message_shape(a) ==
        "dlsweep-train: <trial>/params.json: device: device cuda cannot run: no CUDA device (fix: use device: cpu)");
  // A relative path, or the directory alone, reads the same.
  CHECK(failure_message_shape(".../trial-0003/params.json missing") == "<trial>/params.json missing");
  CHECK(failure_message_shape("trial-0007/params.json missing") == "<trial>/params.json missing");
  CHECK(failure_message_shape("cd '/scratch/runs/s/trial-0012' failed") == "cd '<trial>' failed");
  // Numbers: counts, ranks, floats, exponents, addresses, a word's number.
  CHECK(failure_message_shape("rank 3 of 8: loss 0.25 at lr 1e-3, ptr 0x7f3a9c") ==
        "rank N of N: loss N at lr N, ptr N");
  CHECK(failure_message_shape("CUDA out of memory on cuda:1 (tried 20.00 MiB)") ==
        failure_message_shape("CUDA out of memory on cuda:0 (tried 512.00 MiB)"));
  // Words are the failure: other modules, other files are other failures.
  CHECK(failure_message_shape("ModuleNotFoundError: No module named 'torchx'") !=
        failure_message_shape("ModuleNotFoundError: No module named 'torchy'"));
  CHECK(failure_message_shape("error in /data/a/train.csv") != failure_message_shape("error in /data/b/train.csv"));
  // Not a trial directory: kept as it is (numbers aside).
  CHECK(failure_message_shape("mytrial-3 failed") == "mytrial-N failed");
  CHECK(failure_message_shape("") == "");
}

TEST_CASE("failure_signature: the exit code (the phrase) counts as it is", "[fail_fast]") {
  using dlsweep::orch::failure_signature;
  const std::string line = "error: /r/s/trial-0001/params.json: bad";
  CHECK(failure_signature("exit code 1", line) == failure_signature("exit code 1", "error: /r/s/trial-0009/params.json: bad"));
  CHECK(failure_signature("exit code 1", line) != failure_signature("exit code 2", line));
  CHECK(failure_signature("killed by signal 9", "") != failure_signature("killed by signal 15", ""));
}
