// The batch script's time-limit warning for a `command` trial (templates/slurm_batch.sh.mustache),
// run with bash outside Slurm: the test plays slurmctld and sends USR2 to the batch shell.
//  - A warning that comes before the program asked for it (dlsweep_trial.on_preempt creates
//    preempt_handler; a torch program is still importing) is held and passed on when it asks.
//    It was dropped: the run went on to its time limit, TIMEOUT, FAILED (seen in CI).
//  - The preempt_handler file of the run before a requeue does not count for this run: the
//    program would die of a USR2 it has not asked for yet.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/protocol.hpp"
#include "schedulers/slurm/options.hpp"
#include "schedulers/slurm/script.hpp"
#include "slurm_test_support.hpp"
#include "tests/support/wait_until.hpp"

using namespace dlsweep::sched;
using namespace dlsweep::sched::slurm;
namespace fs = std::filesystem;

namespace {

using test_support::wait_until;

struct BatchRun {
  pid_t pid = -1;
  fs::path trial;
};

// Renders the default template for one `command` trial (warn_always false) running
// `program` with bash, writes the script and index under `dir`, and starts it.
BatchRun start_batch(const fs::path& dir, const std::string& program, bool stale_handler) {
  SlurmOptions o;
  o.script_dir = dir / "slurm";
  o.requeue = false;
  o.signal_lead_s = 60;
  BatchRequest b;
  b.study = "warn";
  b.tag = "batch-warn";
  b.script_dir = o.script_dir;
  b.ranks = 1;
  b.warn_always = false;
  BatchTask t;
  t.token = "warn/0/0";
  t.trial_dir = dir / "trial-0000";
  t.argv = {"/bin/bash", "-c", program};
  b.tasks.push_back(t);
  auto tmpl = load_template(o);
  REQUIRE(tmpl.has_value());
  auto p = prepare_batch(*tmpl, o, b);
  REQUIRE(p.has_value());
  fs::create_directories(o.script_dir);
  fs::create_directories(t.trial_dir);
  slurm_test::write_file(b.index_path(), p->index_text);
  slurm_test::write_file(o.script_dir / "batch.sh", p->request.script);
  if (stale_handler) slurm_test::write_file(t.trial_dir / dlsweep::protocol::kPreemptHandlerFile, "12345\n");
  BatchRun run{::fork(), t.trial_dir};
  REQUIRE(run.pid >= 0);
  if (run.pid == 0) {
    ::execl("/bin/bash", "bash", (o.script_dir / "batch.sh").c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return run;
}

// The batch shell's exit status, or -1 if it did not end within the bound (then killed).
int finish(const BatchRun& run) {
  int status = 0;
  if (!wait_until([&] { return ::waitpid(run.pid, &status, WNOHANG) == run.pid; })) {
    ::kill(run.pid, SIGKILL);
    ::waitpid(run.pid, &status, 0);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool holds(const fs::path& f, const std::string& text) {
  return slurm_test::read_file(f).find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("batch script: a warning before the program asks for it is held and passed on when it asks",
          "[slurm][script][warning]") {
  slurm_test::TempDir dir("dlsweep-warn", slurm_test::kShortTmp);
  // Starts, waits for `go` (the test sends the warning meanwhile), then asks for the warning
  // as on_preempt does and waits for it: exit 75 as a checkpointing program does.
  const std::string program = R"(
echo started >started
while [ ! -e go ]; do sleep 0.02; done
trap 'echo got USR2; exit 75' USR2
echo $$ >preempt_handler
while :; do sleep 0.02; done
)";
  BatchRun run = start_batch(dir.path(), program, /*stale_handler=*/false);
  REQUIRE(wait_until([&] { return fs::exists(run.trial / "started"); }));
  REQUIRE(::kill(run.pid, SIGUSR2) == 0);
  CHECK(wait_until([&] { return holds(run.trial / "stderr.log", "not passed on yet"); }));
  slurm_test::write_file(run.trial / "go", "");
  CHECK(finish(run) == 75);
  CHECK(holds(run.trial / "stdout.log", "got USR2"));
}

TEST_CASE("batch script: a handler file left by the run before a requeue does not pass the warning on",
          "[slurm][script][warning]") {
  slurm_test::TempDir dir("dlsweep-warn", slurm_test::kShortTmp);
  // Never asks: USR2 passed on would kill it (bash's default action), exit 140.
  const std::string program = R"(
echo started >started
while [ ! -e go ]; do sleep 0.02; done
echo finished
)";
  BatchRun run = start_batch(dir.path(), program, /*stale_handler=*/true);
  REQUIRE(wait_until([&] { return fs::exists(run.trial / "started"); }));
  CHECK_FALSE(fs::exists(run.trial / dlsweep::protocol::kPreemptHandlerFile));
  REQUIRE(::kill(run.pid, SIGUSR2) == 0);
  CHECK(wait_until([&] { return holds(run.trial / "stderr.log", "not passed on yet"); }));
  slurm_test::write_file(run.trial / "go", "");
  CHECK(finish(run) == 0);
  CHECK(holds(run.trial / "stdout.log", "finished"));
}
