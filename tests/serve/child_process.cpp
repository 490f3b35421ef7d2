// child_process.cpp — see child_process.hpp.
#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/wait_until.hpp"

namespace dlsweep::serve::testing {

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& out, const std::filesystem::path& err,
             const std::filesystem::path& cwd, const std::vector<std::string>& env) {
  pid_ = ::fork();
  if (pid_ != 0) return;
  int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int n = ::open("/dev/null", O_RDONLY);
  if (o < 0 || e < 0 || n < 0) ::_exit(127);
  ::dup2(n, 0);
  ::dup2(o, 1);
  ::dup2(e, 2);
  ::setpgid(0, 0);  // its own group: a signal to the child reaches its children too
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(127);
  for (const auto& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

Child::~Child() {
  if (pid_ > 0 && running()) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    wait(30);
  }
}

bool Child::running() {
  if (pid_ <= 0 || code_ >= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  code_ = r == pid_ ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : 255;
  return false;
}

namespace {

std::chrono::milliseconds bound(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

}  // namespace

int Child::wait(double timeout_s) {
  if (!test_support::wait_until([&] { return !running(); }, bound(timeout_s))) return -1;
  return code_;
}

void Child::signal(int sig) {
  if (pid_ > 0 && code_ < 0) ::kill(pid_, sig);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

unsigned short wait_for_port(const std::filesystem::path& out, Child& server, double timeout_s) {
  static const std::regex url(R"(http://127\.0\.0\.1:([0-9]+)/)");
  unsigned short port = 0;
  test_support::wait_until(
      [&] {
        if (!server.running()) return true;
        std::smatch m;
        const std::string text = slurp(out);
        if (std::regex_search(text, m, url)) port = static_cast<unsigned short>(std::stoi(m[1]));
        return port != 0;
      },
      bound(timeout_s));
  return port;
}

}  // namespace dlsweep::serve::testing

namespace dlsweep::serve::testing {

ServeUrl wait_for_url(const std::filesystem::path& out, Child& server, double timeout_s) {
  static const std::regex tcp(R"(http://127\.0\.0\.1:([0-9]+)/(\?token=([A-Za-z0-9._~-]+))? )");
  static const std::regex sock(R"(then open: +http://localhost:8080/(\?token=([A-Za-z0-9._~-]+))?)");
  ServeUrl found;
  test_support::wait_until(
      [&] {
        if (!server.running()) return true;
        std::smatch m;
        const std::string text = slurp(out);
        if (std::regex_search(text, m, tcp)) found = {static_cast<unsigned short>(std::stoi(m[1])), m[3], true};
        else if (std::regex_search(text, m, sock)) found = {0, m[2], true};
        return found.ready;
      },
      bound(timeout_s));
  return found;
}

}  // namespace dlsweep::serve::testing
