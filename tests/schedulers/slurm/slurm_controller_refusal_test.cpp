// The controller's own refusals (issue 38): slurmctld past MaxJobCount answers EAGAIN and the
// real sbatch starts its own retry loop ("Slurm temporarily unable to accept job, sleeping and
// retrying", two minutes of it) instead of failing. The CLI driver stops sbatch at that line
// and reports a refusal for now (never the 60 s "controller may be down" timeout), and the
// capacity learns the controller's limit without lowering it when the controller is merely
// full of other records. Against a real slurmctld: tests/e2e/slurm_controller_limits_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../../support/scoped_env.hpp"
#include "common/site_limit_note.hpp"
#include "../../support/temp_dir.hpp"
#include "schedulers/slurm/cli_driver.hpp"
#include "schedulers/slurm/command.hpp"
#include "schedulers/slurm/site_limit.hpp"

using namespace dlsweep::sched::slurm;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// What sbatch 22.05 prints, verified on a local cluster (scripts/slurm-local.sh start
// --max-job-count 6 --max-array-size 8): a 5-task array goes, an 8-task one starts the retry
// loop, a 20-task one is refused at once for MaxArraySize.
constexpr const char* kRetrying = "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n";
constexpr const char* kArrayTooBig = "sbatch: error: Batch job submission failed: Invalid job array specification\n";

void write_exec(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all);
}

}  // namespace

TEST_CASE("controller refusal: sbatch's retry lines are 'not now' for MaxJobCount; MaxArraySize's line too",
          "[slurm][limits][controller]") {
  for (const auto& mark : sbatch_retry_marks()) {
    INFO(mark);
    const bool said = std::string(kRetrying).find(mark) != std::string::npos ||
                      std::string("sbatch: error: Slurm job queue full, sleeping and retrying.").find(mark) != std::string::npos;
    CHECK(said);
  }
  auto busy = capacity_refusal(kRetrying);
  REQUIRE(busy);
  CHECK(busy->kind == LimitKind::job_count);
  CHECK(busy->reason == "MaxJobCount");
  auto full = capacity_refusal("sbatch: error: Slurm job queue full, sleeping and retrying.");
  REQUIRE(full);
  CHECK(full->kind == LimitKind::job_count);
  auto big = capacity_refusal(kArrayTooBig);
  REQUIRE(big);
  CHECK(big->kind == LimitKind::array_size);
}

TEST_CASE("controller refusal: run_command stops a command whose stderr says a stop text, at once",
          "[slurm][limits][controller]") {
  const auto t0 = Clock::now();
  auto r = run_command({"/bin/sh", "-c", std::string("printf '") + kRetrying + "' >&2; exec sleep 60"}, {}, 30, nullptr,
                       sbatch_retry_marks());
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  REQUIRE(r);
  CHECK(r->stopped);
  CHECK_FALSE(r->timed_out);
  CHECK(r->err.find("temporarily unable") != std::string::npos);
  CHECK(took < 10);  // not the command's 60 s, not the 30 s deadline
  // Without stop texts the same line is just stderr.
  auto plain = run_command({"/bin/sh", "-c", std::string("printf '") + kRetrying + "' >&2"}, {}, 30);
  REQUIRE(plain);
  CHECK_FALSE(plain->stopped);
  CHECK(plain->exit_code == 0);
}

TEST_CASE("controller refusal: CliDriver::submit stops sbatch's own retry loop and reports MaxJobCount, not a timeout",
          "[slurm][limits][controller]") {
  test_support::TempDir dir("dlsweep-ctl-refusal");
  fs::create_directories(dir.path() / "bin");
  // sbatch as the real one behaves past MaxJobCount: the line, then sleep and retry (here: forever).
  write_exec(dir.path() / "bin" / "sbatch",
             std::string("#!/bin/sh\nprintf '") + kRetrying + "' >&2\nwhile :; do sleep 1; done\n");
  const char* old = std::getenv("PATH");
  test_support::ScopedEnv path("PATH", (dir.path() / "bin").string() + ":" + (old ? old : ""));
  dlsweep::sched::SlurmOptions options;
  options.command_timeout_s = 20;
  CliDriver driver(options);
  SubmitRequest req;
  req.script_path = dir.path() / "job.sh";
  const auto t0 = Clock::now();
  auto r = driver.submit(req);
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  REQUIRE_FALSE(r);
  INFO(r.error().error.message());
  CHECK(took < 10);                                       // stopped at its first word, not at the timeout
  CHECK_FALSE(r.error().error.is(dlsweep::ErrorKind::timeout));
  CHECK(r.error().transient);
  auto limit = capacity_refusal(r.error().error.what);    // what the backend asks (backend.cpp on_submitted)
  REQUIRE(limit);
  CHECK(limit->kind == LimitKind::job_count);
}

TEST_CASE("controller refusal: MaxJobCount=6 is learned as 5; a refusal at a count it took before holds, not lowers",
          "[slurm][limits][controller]") {
  const SiteLimit limit{LimitKind::job_count, "MaxJobCount", "on the controller"};
  SubmitCapacity cap(/*probe_s=*/120);
  // The controller refuses a submission that would make it hold 6 (job_count + tasks >= 6).
  std::size_t in = 0, waiting = 20, calls = 0;
  while (waiting > 0 && calls < 20) {
    std::size_t n = std::min(waiting, cap.room(in, 0));
    if (n == 0) break;
    ++calls;
    if (in + n >= 6) {
      cap.refused(limit, in, n, 0);
    } else {
      in += n;
      waiting -= n;
      cap.accepted(in);
    }
  }
  CHECK(in == 5);
  CHECK(cap.exact());
  CHECK(cap.allowed() == 5u);
  CHECK(calls <= 8);
  // The 5 end; the controller still holds their records (MinJobAge): 5 more are refused.
  cap.refused(limit, 0, 5, 10);
  CHECK(cap.allowed() == 5u);  // not lowered
  CHECK(cap.held(10.5));
  CHECK(cap.room(0, 10.5) == 0);
  CHECK(*cap.probe_at(10.5) == Approx(11));  // held 1 s
  cap.refused(limit, 0, 5, 11);
  CHECK(*cap.probe_at(11.5) == Approx(13));  // then 2 s, 4 s, ... at most 30 s
  for (double t = 13; t < 200; t += 31) cap.refused(limit, 0, 5, t);
  CHECK(*cap.probe_at(200) <= 230.0);
  // Purged: taken again, the hold ends, the limit stays 5.
  cap.accepted(5);
  CHECK_FALSE(cap.held(300));
  CHECK(cap.room(0, 300) == 5);
  CHECK(cap.allowed() == 5u);
}

TEST_CASE("controller refusal: the line names the controller's limit", "[slurm][limits][controller]") {
  const SiteLimit limit{LimitKind::job_count, "MaxJobCount", "on the controller"};
  CHECK(capacity_line(limit, 5) ==
        "the controller refuses more than 5 jobs (MaxJobCount: all users' jobs count, finished ones until purged)");
  const std::string line = dlsweep::site_limit_line(capacity_line(limit, 5), 5, 14, dlsweep::site_limit_who("Slurm"));
  CHECK(line.find("MaxJobCount") != std::string::npos);
  CHECK(line.find(": 5 in Slurm, 14 waiting") != std::string::npos);
}
