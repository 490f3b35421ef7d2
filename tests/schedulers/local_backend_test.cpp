// LocalBackend with real child processes: stdio capture, env and cwd, start failures,
// signals, process-group kill on cancel/timeout/exit/destruction, mpirun for ranks > 1.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "schedulers/launch.hpp"
#include "schedulers/local/backend.hpp"
#include "schedulers/local/mpi_env.hpp"
#include "schedulers/process_spawn.hpp"
#include "sched_test_support.hpp"
#include "tests/support/wait_until.hpp"

using namespace dlsweep::sched;
using namespace sched_test;
using K = JobEventKind;

namespace {

JobSpec sh_job(const std::filesystem::path& workdir, std::string script) {
  JobSpec s;
  s.study = "local";
  s.trial_id = 1;
  s.attempt = 0;
  s.argv = {"/bin/sh", "-c", std::move(script)};
  s.workdir = workdir;
  return s;
}

std::size_t line_count(const std::filesystem::path& p) {
  auto s = read_file(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

/// Runs `io` until `file` holds a pid (written by the job's script); returns it or -1.
pid_t wait_for_pid_file(boost::asio::io_context& io, const std::filesystem::path& file) {
  pid_t pid = -1;
  run_until(io, [&] {
    std::string s = read_file(file);
    if (s.empty() || s.back() != '\n') return false;
    pid = static_cast<pid_t>(std::stol(s));
    return true;
  });
  return pid;
}

std::unique_ptr<LocalBackend> make_local(boost::asio::io_context& io, Recorder& rec, double grace_s = 1.0,
                                         std::size_t max = 2) {
  LocalOptions o;
  o.cancel_grace_s = grace_s;
  auto b = std::make_unique<LocalBackend>(io, max, o);
  b->set_event_handler(rec.handler());
  return b;
}

}  // namespace

TEST_CASE("local: stdout and stderr are appended to the trial dir logs", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  auto a = b->submit(sh_job(dir.path(), "echo out-1; echo err-1 >&2"));
  REQUIRE(a);
  REQUIRE(run_until(io, [&] { return rec.terminal(*a); }));
  auto c = b->submit(sh_job(dir.path(), "echo out-2; echo err-2 >&2"));
  REQUIRE(c);
  REQUIRE(run_until(io, [&] { return rec.terminal(*c); }));
  CHECK(read_file(dir.path() / "stdout.log") == "out-1\nout-2\n");
  CHECK(read_file(dir.path() / "stderr.log") == "err-1\nerr-2\n");
}

TEST_CASE("local: env is inherited plus the job's, cwd is the workdir, argv is not shell-parsed",
          "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  setenv("DLSWEEP_SCHED_TEST_INHERITED", "from-parent", 1);
  setenv("DLSWEEP_SCHED_TEST_OVERRIDE", "parent", 1);
  JobSpec s = sh_job(dir.path() / "deep" / "trial",
                     "printf '%s\\n' \"$TRIAL_VALUE\" \"$DLSWEEP_SCHED_TEST_INHERITED\" "
                     "\"$DLSWEEP_SCHED_TEST_OVERRIDE\" \"$1\" > env.txt; pwd > cwd.txt");
  s.argv.push_back("sh");
  s.argv.push_back("$(touch pwned); `touch pwned2` 'q'");
  s.env = {{"TRIAL_VALUE", "a b 'c' $HOME"}, {"DLSWEEP_SCHED_TEST_OVERRIDE", "job"}};
  auto id = b->submit(s);
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  CHECK(rec.terminal(*id)->exit_code == 0);
  const auto wd = dir.path() / "deep" / "trial";
  CHECK(read_file(wd / "env.txt") == "a b 'c' $HOME\nfrom-parent\njob\n$(touch pwned); `touch pwned2` 'q'\n");
  CHECK(read_file(wd / "cwd.txt") == std::filesystem::canonical(wd).string() + "\n");
  CHECK_FALSE(std::filesystem::exists(wd / "pwned"));
  CHECK_FALSE(std::filesystem::exists(wd / "pwned2"));
  unsetenv("DLSWEEP_SCHED_TEST_INHERITED");
  unsetenv("DLSWEEP_SCHED_TEST_OVERRIDE");
}

TEST_CASE("local: a program that cannot start is `lost`, naming it", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  std::filesystem::create_directories(dir.path() / "w");
  const auto not_exec = dir.path() / "not-executable.sh";
  { std::ofstream(not_exec) << "#!/bin/sh\necho hi\n"; }
  chmod(not_exec.c_str(), 0644);

  struct Case {
    std::string program;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"dlsweep-no-such-program-xyz", "not found on PATH"},
      {"/nonexistent-dir/dlsweep-prog", "No such file or directory"},
      {not_exec.string(), "Permission denied"},
  };
  for (const auto& c : cases) {
    JobSpec s = sh_job(dir.path() / "w", "");
    s.argv = {c.program, "--flag"};
    auto id = b->submit(s);
    REQUIRE(id);
    REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
    CHECK(rec.kinds(*id) == std::vector<K>{K::queued, K::lost});
    CHECK_THAT(rec.terminal(*id)->message, Catch::Contains(c.program));
    CHECK_THAT(rec.terminal(*id)->message, Catch::Contains(c.expect));
  }
  CHECK(b->active() == 0);
  // A lost job frees its slot: the next one runs.
  auto ok = b->submit(sh_job(dir.path() / "w", "exit 0"));
  REQUIRE(ok);
  REQUIRE(run_until(io, [&] { return rec.terminal(*ok); }));
  CHECK(rec.terminal(*ok)->kind == K::exited);
}

TEST_CASE("local: an unusable workdir is refused at submit", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  { std::ofstream(dir.path() / "file") << "x"; }
  auto id = b->submit(sh_job(dir.path() / "file" / "sub", "true"));
  REQUIRE_FALSE(id);
  CHECK_THAT(id.error().message(), Catch::Contains("cannot create working directory"));
  auto none = b->submit(sh_job("", "true"));
  REQUIRE_FALSE(none);
  CHECK(b->active() == 0);
}

TEST_CASE("local: death by signal is reported", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  auto id = b->submit(sh_job(dir.path(), "kill -9 $$"));
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  const JobEvent* t = rec.terminal(*id);
  CHECK(t->kind == K::exited);
  CHECK(t->signal == SIGKILL);
  CHECK(t->exit_code == 128 + SIGKILL);
  CHECK_THAT(t->message, Catch::Contains("signal 9"));
}

TEST_CASE("local: cancel kills the whole process group", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  auto id = b->submit(sh_job(dir.path(), "sleep 100 & echo $! > gc.pid; wait"));
  REQUIRE(id);
  const pid_t grandchild = wait_for_pid_file(io, dir.path() / "gc.pid");
  REQUIRE(grandchild > 0);
  REQUIRE(kill(grandchild, 0) == 0);
  b->cancel(*id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  CHECK(rec.terminal(*id)->kind == K::cancelled);
  CHECK(rec.terminal(*id)->signal == SIGTERM);
  CHECK(process_gone(grandchild));
}

TEST_CASE("local: cancel escalates to SIGKILL after the grace period", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec, 0.3);
  auto id = b->submit(sh_job(dir.path(), "trap '' TERM; sleep 100 & echo $! > gc.pid; wait"));
  REQUIRE(id);
  const pid_t grandchild = wait_for_pid_file(io, dir.path() / "gc.pid");
  REQUIRE(grandchild > 0);
  const auto t0 = std::chrono::steady_clock::now();
  b->cancel(*id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took >= 0.29);
  CHECK(took < 3);
  CHECK(rec.terminal(*id)->kind == K::cancelled);
  CHECK(rec.terminal(*id)->signal == SIGKILL);
  CHECK(process_gone(grandchild));
}

TEST_CASE("local: a finished job leaves no background processes", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  auto id = b->submit(sh_job(dir.path(), "sleep 100 & echo $! > gc.pid; exit 0"));
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  CHECK(rec.terminal(*id)->kind == K::exited);
  const pid_t grandchild = static_cast<pid_t>(std::stol(read_file(dir.path() / "gc.pid")));
  CHECK(process_gone(grandchild));
}

TEST_CASE("local: destroying the backend kills and reaps its jobs", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  auto id = b->submit(sh_job(dir.path(), "sleep 100 & echo $! > gc.pid; wait"));
  REQUIRE(id);
  const pid_t grandchild = wait_for_pid_file(io, dir.path() / "gc.pid");
  REQUIRE(grandchild > 0);
  const pid_t leader = b->pid_of(*id).value_or(-1);
  REQUIRE(leader > 0);
  const std::size_t before = rec.events.size();
  b.reset();
  CHECK(kill(leader, 0) == -1);  // reaped, not a zombie
  CHECK(process_gone(grandchild));
  run_for(io, 0.05);
  CHECK(rec.events.size() == before);  // nothing delivered after destruction
}

TEST_CASE("local: other children of the process are not reaped by the backend", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  auto mine = spawn_process({"/bin/sh", "-c", "exit 5"}, dir.path(), {});
  REQUIRE(mine);
  auto id = b->submit(sh_job(dir.path() / "w", "sleep 0.2"));
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  int status = 0;
  REQUIRE(waitpid(*mine, &status, 0) == *mine);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 5);
}

TEST_CASE("local: ranks > 1 run under mpirun", "[sched][local][mpi]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  JobSpec s = sh_job(dir.path(), "echo rank $OMPI_MCA_pml");
  s.ranks = 2;
  auto launched = b->launch_argv(s);
  REQUIRE(launched);
  const auto& argv = *launched;
  REQUIRE(argv.size() >= 7);
  CHECK(argv[0] == "mpirun");
  CHECK(argv[1] == "-np");
  CHECK(argv[2] == "2");
  CHECK(argv[3] == "--oversubscribe");
  CHECK(argv[argv.size() - 3] == "/bin/sh");
  CHECK(argv.back() == "echo rank $OMPI_MCA_pml");
  CHECK((geteuid() == 0) == (std::find(argv.begin(), argv.end(), "--allow-run-as-root") != argv.end()));
  s.ranks = 1;
  CHECK(*b->launch_argv(s) == s.argv);
  s.ranks = 2;

  if (!find_on_path("mpirun", effective_path({}))) {
    WARN("mpirun not on PATH: skipping the launch under mpirun");
    return;
  }
  auto id = b->submit(s);
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }, 30));
  INFO(read_file(dir.path() / "stderr.log"));
  CHECK(rec.terminal(*id)->kind == K::exited);
  CHECK(rec.terminal(*id)->exit_code == 0);
  // Open MPI's shared-memory path on one machine (launch.hpp kLocalOmpiPml), unless the
  // orchestrator's environment says otherwise.
  const char* own = std::getenv("OMPI_MCA_pml");
  const std::string pml = own ? own : local_sets_ompi_pml() ? dlsweep::sched::kLocalOmpiPml : "";
  CHECK(read_file(dir.path() / "stdout.log") == "rank " + pml + "\nrank " + pml + "\n");
  // The trial's own env wins.
  TempDir dir2;
  s.workdir = dir2.path();
  s.env["OMPI_MCA_pml"] = "^cm";
  s.trial_id = 2;
  auto id2 = b->submit(s);
  REQUIRE(id2);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id2); }, 30));
  CHECK(rec.terminal(*id2)->exit_code == 0);
  CHECK(read_file(dir2.path() / "stdout.log") == "rank ^cm\nrank ^cm\n");
}

TEST_CASE("local: cancelling a multi-rank job leaves no rank behind", "[sched][local][mpi]") {
  if (!find_on_path("mpirun", effective_path({}))) {
    WARN("mpirun not on PATH: skipping");
    return;
  }
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec, 2.0);
  JobSpec s = sh_job(dir.path(), "echo $$ >> ranks.pid; exec sleep 100");
  s.ranks = 2;
  auto id = b->submit(s);
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return line_count(dir.path() / "ranks.pid") == 2; }, 30));
  std::vector<pid_t> ranks;
  std::istringstream in(read_file(dir.path() / "ranks.pid"));
  for (long p; in >> p;) ranks.push_back(static_cast<pid_t>(p));
  REQUIRE(ranks.size() == 2);
  b->cancel(*id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }, 10));
  CHECK(rec.terminal(*id)->kind == K::cancelled);
  for (pid_t r : ranks) CHECK(process_gone(r));
}

TEST_CASE("local: a missing mpirun makes a multi-rank job `lost`", "[sched][local]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  LocalOptions o;
  o.mpirun = "dlsweep-no-such-mpirun";
  LocalBackend b(io, 1, o);
  b.set_event_handler(rec.handler());
  JobSpec s = sh_job(dir.path(), "echo rank");
  s.ranks = 2;
  auto id = b.submit(s);
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }));
  CHECK(rec.terminal(*id)->kind == K::lost);
  CHECK_THAT(rec.terminal(*id)->message, Catch::Contains("dlsweep-no-such-mpirun"));
}

TEST_CASE("local: launcher mpirun gives every rank the torch.distributed variables", "[sched][local][mpi]") {
  TempDir dir;
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  JobSpec s = sh_job(dir.path(), "echo \"$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT\"");
  s.ranks = 2;
  s.launcher = "srun";
  auto refused = b->launch_argv(s);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().where == "trial.launcher");
  s.launcher = "torchrun";
  auto torch = b->launch_argv(s);
  REQUIRE(torch);
  CHECK((*torch)[0] == "bash");
  CHECK(std::find(torch->begin(), torch->end(), "torchrun-node") != torch->end());
  s.launcher = "mpirun";
  if (!find_on_path("mpirun", effective_path({}))) {
    WARN("mpirun not on PATH: skipping the launch under mpirun");
    return;
  }
  auto id = b->submit(s);
  REQUIRE(id);
  REQUIRE(run_until(io, [&] { return rec.terminal(*id); }, 30));
  INFO(read_file(dir.path() / "stderr.log"));
  CHECK(rec.terminal(*id)->exit_code == 0);
  std::string out = read_file(dir.path() / "stdout.log");
  INFO(out);
  // Both ranks, each with its own rank, the same world, rendezvous and a real port.
  CHECK(out.find("0/2/0/2 127.0.0.1 ") != std::string::npos);
  CHECK(out.find("1/2/1/2 127.0.0.1 ") != std::string::npos);
  auto port = out.substr(out.rfind(' ') + 1);
  CHECK(std::stoi(port) > 0);
}

TEST_CASE("local: stop_orphans stops what a dead orchestrator's trial left running, and nothing else",
          "[sched][local][orphans]") {
  // An orphan: a process (and its child) carrying a trial dir in DLSWEEP_TRIAL_DIR, started
  // outside this backend (as by an orchestrator that died); a bystander with another trial dir.
  TempDir dir;
  const auto trial = std::filesystem::absolute(dir.path() / "trial-7"), other = std::filesystem::absolute(dir.path() / "trial-8");
  std::filesystem::create_directories(trial);
  std::filesystem::create_directories(other);
  auto orphan = spawn_process({"/bin/sh", "-c", "sleep 300 & echo $! > child.pid; wait"}, trial,
                              {{"DLSWEEP_TRIAL_DIR", trial.string()}});
  auto bystander = spawn_process({"/bin/sh", "-c", "sleep 300"}, other, {{"DLSWEEP_TRIAL_DIR", other.string()}});
  REQUIRE(orphan);
  REQUIRE(bystander);
  REQUIRE(test_support::wait_until([&] {
    auto s = read_file(trial / "child.pid");
    return !s.empty() && s.back() == '\n';
  }));
  const pid_t child = static_cast<pid_t>(std::stol(read_file(trial / "child.pid")));
  // $! is known as soon as the shell forked; until the child's execve is done its
  // /proc/PID/environ can read empty (the new image's environment is not mapped yet), and a
  // scan in that window sees only the shell. Wait for the exec (its cmdline says "sleep").
  REQUIRE(test_support::wait_until([&] { return read_file(std::filesystem::path("/proc") / std::to_string(child) / "cmdline").rfind("sleep", 0) == 0; }));
  boost::asio::io_context io;
  Recorder rec;
  auto b = make_local(io, rec);
  CHECK(b->stop_orphans({trial}, 5.0) == 2);  // the shell and its sleep
  int status = 0;
  REQUIRE(waitpid(*orphan, &status, 0) == *orphan);
  CHECK(WIFSIGNALED(status));
  CHECK(process_gone(child));
  CHECK(kill(*bystander, 0) == 0);  // another trial's process is left alone
  CHECK(b->stop_orphans({trial}, 5.0) == 0);
  kill(*bystander, SIGKILL);
  waitpid(*bystander, &status, 0);
}
