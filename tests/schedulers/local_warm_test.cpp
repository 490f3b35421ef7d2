// LocalBackend with keep_imported: Python trials handed to kept-imported runners (`python3 -m
// dlsweep_optuna ... --serve`, real interpreters): sharing, isolation per trial, and the
// fault handling of a process per trial (a trial that exits its process, cancel, timeout,
// the orchestrator's kill -9, destruction) with the runner as the trial's process group.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "schedulers/local/backend.hpp"
#include "sched_test_support.hpp"
#include "tests/support/wait_until.hpp"

using namespace dlsweep::sched;
using namespace sched_test;
using K = JobEventKind;

namespace {

namespace fs = std::filesystem;

/// An Optuna-shaped objective whose behaviour the trial's DLSWEEP_TEST_MODE picks (a DLSWEEP_
/// variable: not part of what decides which runner may take a trial).
constexpr const char* kObjective = R"PY(
import os, pathlib, sys, time

def objective(trial):
    mode = os.environ.get("DLSWEEP_TEST_MODE", "ok")
    pathlib.Path("pid").write_text(f"{os.getpid()}\n")
    print(f"ran in {os.getcwd()} mode {mode}")
    if mode == "exit":
        os._exit(3)
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "sleep":
        time.sleep(600)
    return 1.0
)PY";

struct Fixture {
  TempDir tmp;
  boost::asio::io_context io;
  Recorder rec;
  int next_trial = 0;

  Fixture() {
    std::ofstream(tmp.path() / "objective.py") << kObjective;
  }

  std::unique_ptr<LocalBackend> backend(std::size_t max_concurrent = 1, double grace_s = 2) {
    LocalOptions o;
    o.keep_imported = true;
    o.cancel_grace_s = grace_s;
    auto b = std::make_unique<LocalBackend>(io, max_concurrent, o);
    b->set_event_handler(rec.handler());
    return b;
  }

  JobSpec job(const std::string& mode) {
    JobSpec s;
    s.study = "warm";
    s.trial_id = ++next_trial;
    s.workdir = tmp.path() / ("trial-" + std::to_string(s.trial_id));
    s.argv = {"python3", "-m", "dlsweep_optuna", (tmp.path() / "objective.py").string() + ":objective"};
    s.env = {{"PYTHONPATH", std::string(DLSWEEP_SOURCE_DIR) + "/python"},
             {"DLSWEEP_TRIAL_DIR", s.workdir.string()},
             {"DLSWEEP_TEST_MODE", mode}};
    return s;
  }

  const JobEvent* run(LocalBackend& b, const JobSpec& s, std::string* id_out = nullptr) {
    auto id = b.submit(s);
    REQUIRE(id);
    if (id_out) *id_out = *id;
    REQUIRE(run_until(io, [&] { return rec.terminal(*id) != nullptr; }, 60));
    return rec.terminal(*id);
  }

  pid_t pid_of_trial(const JobSpec& s) const {
    auto text = read_file(s.workdir / "pid");
    return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
  }
};

bool alive(pid_t pid) { return kill(pid, 0) == 0; }

}  // namespace

TEST_CASE("keep_imported: trials of one command run one after another in one runner, each in its own directory") {
  Fixture f;
  auto b = f.backend();
  auto s1 = f.job("ok"), s2 = f.job("ok");
  std::string id1;
  const JobEvent* e1 = f.run(*b, s1, &id1);
  REQUIRE(e1->kind == K::exited);
  CHECK(e1->exit_code == 0);
  const JobEvent* e2 = f.run(*b, s2);
  REQUIRE(e2->kind == K::exited);
  CHECK(e2->exit_code == 0);
  const pid_t p1 = f.pid_of_trial(s1), p2 = f.pid_of_trial(s2);
  CHECK(p1 > 0);
  CHECK(p1 == p2);  // one interpreter: imported once
  // Each trial ran in its own directory and wrote its own logs there.
  CHECK(read_file(s1.workdir / "stdout.log").find("ran in " + s1.workdir.string()) != std::string::npos);
  CHECK(read_file(s2.workdir / "stdout.log").find("ran in " + s2.workdir.string()) != std::string::npos);
  CHECK(read_file(s2.workdir / "stdout.log").find(s1.workdir.string()) == std::string::npos);
  bool said = false;
  for (const auto& e : f.rec.events)
    if (e.job_id == id1 && e.kind == K::started) said = e.message.find("kept-imported") != std::string::npos;
  CHECK(said);
  // With every trial ended the backend leaves no work behind: io_context::run() returns
  // (an idle runner is not waited for).
  f.io.restart();
  f.io.run_for(std::chrono::seconds(3));
  CHECK(f.io.stopped());
  // Destruction stops the idle runner.
  REQUIRE(alive(p1));
  b.reset();
  CHECK(process_gone(p1));
}

TEST_CASE("keep_imported: a trial that raises exits 1 as a fresh process would, and the runner goes on") {
  Fixture f;
  auto b = f.backend();
  auto s1 = f.job("raise"), s2 = f.job("ok");
  const JobEvent* e1 = f.run(*b, s1);
  REQUIRE(e1->kind == K::exited);
  CHECK(e1->exit_code == 1);
  CHECK(read_file(s1.workdir / "stderr.log").find("RuntimeError: boom") != std::string::npos);
  const JobEvent* e2 = f.run(*b, s2);
  REQUIRE(e2->kind == K::exited);
  CHECK(e2->exit_code == 0);
  CHECK(f.pid_of_trial(s1) == f.pid_of_trial(s2));
}

TEST_CASE("keep_imported: a trial that ends its process takes the runner with it; the next gets a fresh one") {
  Fixture f;
  auto b = f.backend();
  auto s1 = f.job("exit"), s2 = f.job("ok");
  const JobEvent* e1 = f.run(*b, s1);
  REQUIRE(e1->kind == K::exited);
  CHECK(e1->exit_code == 3);
  CHECK(process_gone(f.pid_of_trial(s1)));
  const JobEvent* e2 = f.run(*b, s2);
  REQUIRE(e2->kind == K::exited);
  CHECK(e2->exit_code == 0);
  CHECK(f.pid_of_trial(s2) != f.pid_of_trial(s1));
}

TEST_CASE("keep_imported: cancel and timeout stop the runner with the trial") {
  Fixture f;
  auto b = f.backend(1, /*grace_s=*/1);
  SECTION("cancel") {
    auto s = f.job("sleep");
    auto id = b->submit(s);
    REQUIRE(id);
    REQUIRE(run_until(f.io, [&] { return f.pid_of_trial(s) > 0; }, 60));
    const pid_t runner = f.pid_of_trial(s);
    b->cancel(*id);
    REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*id) != nullptr; }, 60));
    CHECK(f.rec.terminal(*id)->kind == K::cancelled);
    CHECK(process_gone(runner));
    auto next = f.job("ok");
    const JobEvent* e = f.run(*b, next);
    REQUIRE(e->kind == K::exited);
    CHECK(e->exit_code == 0);
    CHECK(f.pid_of_trial(next) != runner);
  }
  SECTION("timeout") {
    auto s = f.job("sleep");
    s.timeout_s = 1;
    std::string id;
    const JobEvent* e = f.run(*b, s, &id);
    REQUIRE(e->kind == K::cancelled);
    CHECK(e->message.find("timed out") != std::string::npos);
    CHECK(process_gone(f.pid_of_trial(s)));
  }
}

TEST_CASE("keep_imported: two at a time get two runners; a later trial reuses an idle one") {
  Fixture f;
  auto b = f.backend(2);
  auto s1 = f.job("ok"), s2 = f.job("ok"), s3 = f.job("ok");
  auto id1 = b->submit(s1), id2 = b->submit(s2);
  REQUIRE(id1);
  REQUIRE(id2);
  REQUIRE(run_until(f.io, [&] { return f.rec.terminal(*id1) && f.rec.terminal(*id2); }, 60));
  CHECK(f.rec.max_running == 2);
  CHECK(f.pid_of_trial(s1) != f.pid_of_trial(s2));
  f.run(*b, s3);
  const pid_t p3 = f.pid_of_trial(s3);
  CHECK((p3 == f.pid_of_trial(s1) || p3 == f.pid_of_trial(s2)));
}

TEST_CASE("keep_imported: another command runs as a process of its own, as without the option") {
  Fixture f;
  auto b = f.backend();
  JobSpec s;
  s.study = "warm";
  s.trial_id = 9;
  s.workdir = f.tmp.path() / "sh";
  s.argv = {"/bin/sh", "-c", "echo $$ > pid; exit 4"};
  const JobEvent* e = f.run(*b, s);
  REQUIRE(e->kind == K::exited);
  CHECK(e->exit_code == 4);
  CHECK(process_gone(f.pid_of_trial(s)));
}

TEST_CASE("keep_imported: a runner does not outlive the orchestrator killed with -9 (its trial cannot run twice)") {
  TempDir tmp;
  std::ofstream(tmp.path() / "objective.py") << kObjective;
  const fs::path trial = tmp.path() / "trial-1";
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The "orchestrator": a backend running one long trial, until it is killed.
    boost::asio::io_context io;
    LocalOptions o;
    o.keep_imported = true;
    LocalBackend b(io, 1, o);
    JobSpec s;
    s.study = "warm";
    s.trial_id = 1;
    s.workdir = trial;
    s.argv = {"python3", "-m", "dlsweep_optuna", (tmp.path() / "objective.py").string() + ":objective"};
    s.env = {{"PYTHONPATH", std::string(DLSWEEP_SOURCE_DIR) + "/python"},
             {"DLSWEEP_TRIAL_DIR", trial.string()},
             {"DLSWEEP_TEST_MODE", "sleep"}};
    if (!b.submit(s)) _exit(1);
    run_until(io, [] { return false; }, 120);
    _exit(0);
  }
  pid_t runner = -1;
  const bool started = test_support::wait_until([&] {
    auto text = read_file(trial / "pid");
    if (text.empty() || text.back() != '\n') return false;
    runner = static_cast<pid_t>(std::stol(text));
    return true;
  });
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(started);
  CHECK(process_gone(runner));
}
