// dlsweep writing into a pipe whose reader is gone (`dlsweep submit --dry-run study.yaml 2>&1
// | head -1`): it ends quietly — exit 141 (128 + SIGPIPE) or killed by SIGPIPE, as any Unix
// tool — never an abort. It aborted (exit 134): submit ignores SIGPIPE (a sweep outlives its
// terminal), so the write failed with EPIPE, fmt::print threw, and the catch-all's own print
// to the same closed pipe threw again, out of main.
//
// The pipe's read end is closed before dlsweep starts, so its first write fails: no race with
// a reader that closes "early enough".
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "run_command.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;

namespace {

struct Ended {
  bool exited = false;
  int code = -1;    ///< exit status, when exited
  int signal = 0;   ///< terminating signal, when killed
  std::string how() const { return exited ? "exit " + std::to_string(code) : "signal " + std::to_string(signal); }
};

/// Runs argv in `cwd` with stdout and stderr both on a pipe nobody reads, with SIGPIPE's
/// default action (as a shell starts it).
Ended run_into_closed_pipe(const std::vector<std::string>& argv, const fs::path& cwd) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);  // the reader is gone before the first write
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::signal(SIGPIPE, SIG_DFL);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  int status = 0;
  const bool ended = test_support::wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; },
                                              std::chrono::seconds(120));
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL("dlsweep did not end within 120 s");
  }
  Ended e;
  e.exited = WIFEXITED(status);
  if (e.exited) e.code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

/// Quiet: what `| head` does to any tool — killed by SIGPIPE, or exit 141 — or exit 0.
bool quiet(const Ended& e) { return e.exited ? (e.code == 0 || e.code == 128 + SIGPIPE) : e.signal == SIGPIPE; }

}  // namespace

TEST_CASE("submit --dry-run into a closed pipe ends quietly, never aborts", "[pipe]") {
  for (const char* example : {"slurm-gpu-critical-batch.yaml", "quickstart.yaml"}) {
    DYNAMIC_SECTION(example) {
      const fs::path dir = fresh_dir(std::string("closed-pipe-") + example);
      const Ended e = run_into_closed_pipe(
          {DLSWEEP_BIN, "submit", "--dry-run", (fs::path(DLSWEEP_SOURCE_DIR) / "examples" / example).string()}, dir);
      INFO(e.how());
      CHECK(quiet(e));
      CHECK_FALSE((!e.exited && e.signal == SIGABRT));
    }
  }
}

TEST_CASE("verbs that print to stdout or stderr into a closed pipe end quietly", "[pipe]") {
  const fs::path dir = fresh_dir("closed-pipe-verbs");
  // The help (stdout), a usage error (stderr), a read verb's error (stderr: no such database).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{DLSWEEP_BIN}, {DLSWEEP_BIN, "sumbit"},
        {DLSWEEP_BIN, "--db", (dir / "none.db").string(), "results", "nosuch"},
        {DLSWEEP_BIN, "resume", "nosuch"}}) {
    const Ended e = run_into_closed_pipe(args, dir);
    INFO(args.back() << ": " << e.how());
    CHECK(!(!e.exited && e.signal == SIGABRT));
    CHECK((e.exited ? e.code != 70 : e.signal == SIGPIPE));  // no "internal error"
  }
}
