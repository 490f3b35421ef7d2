// command.cpp — posix_spawnp with captured stdout/stderr and a deadline; see
// slurm/command.hpp for the contract.
#include "schedulers/slurm/command.hpp"

#include "common/program_path.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "common/shell_quote.hpp"

extern char** environ;

namespace dlsweep::sched::slurm {

namespace {

using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
};

/// Kills the child's group and reaps the child; returns its wait status.
int kill_and_reap(pid_t pid) {
  kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string describe_command(const std::vector<std::string>& argv) { return shell_join(argv); }

Result<CommandOutput> run_command(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                                  double timeout_s, const std::atomic<bool>* interrupt,
                                  const std::vector<std::string>& stop_on_stderr) {
  const std::string what = describe_command(argv);
  if (argv.empty()) return fail("empty command line", "run_command");

  // Everything the child needs is built before spawning.
  std::vector<std::string> argv_s = argv;
  std::vector<std::string> env_s = merged_environment(env);
  std::vector<char*> cargv = c_strings(argv_s), cenv = c_strings(env_s);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return fail(fmt::format("pipe: {}", std::strerror(errno)), what);
  Fd out_r{out_pipe[0]}, out_w{out_pipe[1]};
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return fail(fmt::format("pipe: {}", std::strerror(errno)), what);
  Fd err_r{err_pipe[0]}, err_w{err_pipe[1]};

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.fd, 1);  // dup2 clears close-on-exec on 1 and 2
  posix_spawn_file_actions_adddup2(&fa, err_w.fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  out_w.reset();
  err_w.reset();
  if (rc != 0) {
    return fail(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)), what,
                rc == ENOENT ? "install the Slurm client commands (Debian: slurm-client) or fix PATH" : "");
  }

  CommandOutput result;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  char buf[65536];
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    if (Clock::now() >= deadline) {
      result.timed_out = true;
      break;
    }
    if (interrupt && interrupt->load()) {
      result.interrupted = true;
      break;
    }
    pollfd fds[2];
    int n = 0;
    if (out_r.fd >= 0) fds[n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[n++] = {err_r.fd, POLLIN, 0};
    int r = poll(fds, n, 50);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < n && r > 0; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      bool is_out = fds[i].fd == out_r.fd;
      if (got <= 0) {
        (is_out ? out_r : err_r).reset();
      } else {
        (is_out ? result.out : result.err).append(buf, static_cast<std::size_t>(got));
        if (!is_out)
          for (const auto& text : stop_on_stderr)
            if (result.err.find(text) != std::string::npos) result.stopped = true;
      }
    }
    if (result.stopped) break;
  }
  int status = 0;
  if (result.timed_out || result.interrupted || result.stopped) {
    kill_and_reap(pid);
    return result;
  }
  // Both pipes closed: the command is ending. Give it until the deadline to exit.
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return fail(fmt::format("waitpid: {}", std::strerror(errno)), what);
    if (Clock::now() >= deadline || (interrupt && interrupt->load())) {
      result.timed_out = Clock::now() >= deadline;
      result.interrupted = !result.timed_out;
      kill_and_reap(pid);
      return result;
    }
    usleep(2000);
  }
  result.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  return result;
}

}  // namespace dlsweep::sched::slurm
