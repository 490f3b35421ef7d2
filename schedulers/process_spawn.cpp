// process_spawn.cpp — clone(CLONE_VM|CLONE_VFORK)/exec with an errno pipe; see process_spawn.hpp for the contract.
#include "schedulers/process_spawn.hpp"

#include "common/program_path.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/protocol.hpp"

extern char** environ;

namespace dlsweep::sched {

namespace {

/// Which step failed in the child; sent through the pipe together with errno.
enum class Step : int { chdir = 1, open_stdin, open_stdout, open_stderr, dup, exec };

struct ChildReport {
  Step step;
  int err;
};

const char* step_name(Step s) {
  switch (s) {
    case Step::chdir: return "changing to the working directory";
    case Step::open_stdin: return "opening /dev/null";
    case Step::open_stdout: return "opening stdout.log";
    case Step::open_stderr: return "opening stderr.log";
    case Step::dup: return "redirecting stdio";
    case Step::exec: return "executing the program";
  }
  return "starting";
}

/// In the child: report the failed step and errno to the parent, then exit.
[[noreturn]] void child_fail(int report_fd, Step step) {
  ChildReport r{step, errno};
  ssize_t ignored = write(report_fd, &r, sizeof r);
  (void)ignored;
  _exit(127);
}

/// Only async-signal-safe calls from here to execve: we may be a fork of a threaded process.
[[noreturn]] void child_exec(int report_fd, const char* path, char* const* argv, char* const* envp,
                             const char* workdir, const char* out_path, const char* err_path,
                             bool die_with_parent, int keep_fd) {
  auto die = [report_fd](Step step) { child_fail(report_fd, step); };
  setpgid(0, 0);
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Signal state is inherited across exec: start the program with default dispositions
  // and nothing blocked (the orchestrator may ignore SIGPIPE or block SIGCHLD). Handlers
  // are reset while every signal is still blocked (the parent blocked them before clone):
  // a handler of the parent must never run here, on memory the parent shares.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (chdir(workdir) != 0) die(Step::chdir);
  int in = open("/dev/null", O_RDONLY);
  if (in < 0) die(Step::open_stdin);
  int out = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out < 0) die(Step::open_stdout);
  int err = open(err_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (err < 0) die(Step::open_stderr);
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) die(Step::dup);
  // Nothing of ours beyond stdio leaks into the trial (the report pipe is already
  // close-on-exec), but the one descriptor the caller hands on (a pilot worker's run lease).
  // Best effort: older kernels lack CLOSE_RANGE_CLOEXEC.
  if (keep_fd >= 3) {
    if (keep_fd > 3) close_range(3, static_cast<unsigned>(keep_fd - 1), CLOSE_RANGE_CLOEXEC);
    close_range(static_cast<unsigned>(keep_fd + 1), ~0U, CLOSE_RANGE_CLOEXEC);
  } else {
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  }
  execve(path, argv, envp);
  child_fail(report_fd, Step::exec);
}

struct ChildArgs {
  int report_fd;
  const char *path, *workdir, *out_path, *err_path;
  char* const* argv;
  char* const* envp;
  bool die_with_parent;
  int keep_fd;
};

int child_main(void* p) {
  const auto* a = static_cast<const ChildArgs*>(p);
  child_exec(a->report_fd, a->path, a->argv, a->envp, a->workdir, a->out_path, a->err_path, a->die_with_parent, a->keep_fd);
}

}  // namespace

std::string effective_path(const std::map<std::string, std::string>& env) {
  if (auto it = env.find("PATH"); it != env.end()) return it->second;
  if (const char* p = std::getenv("PATH")) return p;
  return "/usr/local/bin:/usr/bin:/bin";
}

Result<pid_t> spawn_process(const std::vector<std::string>& argv_in, const std::filesystem::path& workdir,
                            const std::map<std::string, std::string>& env, bool die_with_parent,
                            const std::vector<std::string>& unset, int keep_fd) {
  if (argv_in.empty()) return fail("empty command line", "job", "give the job a program to run");
  const std::string& program = argv_in[0];
  auto path = find_on_path(program, effective_path(env));
  if (!path) {
    return fail(fmt::format("program '{}' not found on PATH", program), "job",
                "install it, give its full path, or set PATH in the job environment");
  }

  // Everything the child touches is built now, before fork.
  std::vector<std::string> argv_s = argv_in;
  std::vector<std::string> env_s = merged_environment(env, unset);
  auto argv = c_strings(argv_s);
  auto envp = c_strings(env_s);
  const std::string wd = workdir.string();
  const std::string out_path = (workdir / protocol::kStdoutFile).string();
  const std::string err_path = (workdir / protocol::kStderrFile).string();

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return fail(fmt::format("cannot start '{}': pipe failed: {}", program, std::strerror(errno)), "job",
                "the orchestrator may be out of file descriptors (ulimit -n)");
  }
  // clone(CLONE_VM | CLONE_VFORK) on a stack of its own, as glibc's posix_spawn does: no
  // copy of the orchestrator's page tables (fork's cost grows with its heap; this is
  // constant), and we resume once the child has exec'd or died. posix_spawn itself cannot
  // say which step failed (chdir, an open, exec); this can.
  ChildArgs args{fds[1], path->c_str(), wd.c_str(), out_path.c_str(), err_path.c_str(), argv.data(), envp.data(),
                 die_with_parent, keep_fd};
  std::vector<char> stack(64 * 1024);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = clone(child_main, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return fail(fmt::format("cannot start '{}': clone failed: {}", program, std::strerror(clone_errno)), "job",
                "the machine may be out of processes or memory");
  }
  close(fds[1]);

  // EOF means exec succeeded (the pipe closed on exec); a full report means it failed.
  ChildReport report{};
  std::size_t got = 0;
  while (got < sizeof report) {
    ssize_t n = read(fds[0], reinterpret_cast<char*>(&report) + got, sizeof report - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fds[0]);
  if (got < sizeof report) return pid;

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return fail(fmt::format("cannot start '{}': {} failed: {}", program, step_name(report.step),
                          std::strerror(report.err)),
              wd, report.step == Step::exec ? "check the program path and that it is executable"
                                            : "check that the trial directory exists and is writable");
}

}  // namespace dlsweep::sched
