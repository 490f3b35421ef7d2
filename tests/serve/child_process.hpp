// child_process.hpp — test/bench helper: a program started in the background (fork+exec),
// its stdout and stderr going to files, stopped with a signal and waited for.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace dlsweep::serve::testing {

class Child {
 public:
  /// Starts argv[0] with argv, in `cwd`, with extra environment "K=V" entries.
  Child(const std::vector<std::string>& argv, const std::filesystem::path& out, const std::filesystem::path& err,
        const std::filesystem::path& cwd = {}, const std::vector<std::string>& env = {});
  ~Child();  ///< SIGKILL and reap if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool started() const { return pid_ > 0; }
  /// True while it runs (reaps it when it has ended).
  bool running();
  /// Waits up to timeout_s; the exit code (128+signal when killed), or -1 on timeout.
  int wait(double timeout_s);
  void signal(int sig);
  int exit_code() const { return code_; }

 private:
  pid_t pid_ = -1;
  int code_ = -1;
};

/// The whole content of a file ("" if missing).
std::string slurp(const std::filesystem::path& p);

/// Waits (up to timeout_s) for `dlsweep serve`'s URL line in `out` and returns its port (0 if
/// it never came).
unsigned short wait_for_port(const std::filesystem::path& out, Child& server, double timeout_s);

/// What `dlsweep serve` printed: its port (0 on a Unix socket) and the token of its URL
/// ("" with --no-token; "TOKEN" when it came from --token-file).
struct ServeUrl {
  unsigned short port = 0;
  std::string token;
  bool ready = false;  ///< false when the line never came
};
/// Waits (up to timeout_s) for `dlsweep serve`'s URL line in `out`.
ServeUrl wait_for_url(const std::filesystem::path& out, Child& server, double timeout_s);

}  // namespace dlsweep::serve::testing
