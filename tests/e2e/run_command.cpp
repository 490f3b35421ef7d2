#include "run_command.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <fstream>
#include <sstream>

#include "common/shell_quote.hpp"
#include "tests/support/wait_until.hpp"

namespace fs = std::filesystem;

static std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_command(const std::vector<std::string>& argv, const fs::path& cwd,
                          const std::vector<std::string>& env) {
  static int counter = 0;
  fs::path io = fs::temp_directory_path() / ("dlsweep-cmd-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::string cmd;
  if (!cwd.empty()) cmd += "cd " + dlsweep::shell_quote(cwd.string()) + " && ";
  for (const auto& e : env) cmd += "export " + dlsweep::shell_quote(e) + "; ";
  cmd += dlsweep::shell_join(argv) + " >" + dlsweep::shell_quote(io.string() + ".out") + " 2>" +
         dlsweep::shell_quote(io.string() + ".err") + " </dev/null";
  int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(io.string() + ".out");
  r.err = slurp(io.string() + ".err");
  fs::remove(io.string() + ".out");
  fs::remove(io.string() + ".err");
  return r;
}

int spawn_dlsweep(const fs::path& dir, const fs::path& db, std::vector<std::string> args, const fs::path& err) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::chdir(dir.c_str()) != 0) ::_exit(127);
  if (!std::freopen(err.c_str(), "w", stderr)) ::_exit(127);
  std::vector<std::string> argv = {DLSWEEP_BIN, "--db", db.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> a;
  for (auto& s : argv) a.push_back(s.data());
  a.push_back(nullptr);
  ::execv(a[0], a.data());
  ::_exit(127);
}

bool wait_for(const fs::path& p, std::chrono::seconds limit) { return test_support::wait_for_file(p, limit); }

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("dlsweep-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

CommandResult run_dlsweep(const fs::path& db, const std::vector<std::string>& args, const fs::path& cwd) {
  std::vector<std::string> argv = {DLSWEEP_BIN, "--db", db.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, cwd, {std::string("DLSWEEP_TRAIN=") + DLSWEEP_TRAIN_BIN});
}

CommandResult serve_get(const fs::path& db, const std::string& path, const std::vector<std::string>& as_user) {
  static constexpr const char* kDriver = R"(import re, subprocess, sys, urllib.request
bin, db, path = sys.argv[1:4]
p = subprocess.Popen([bin, "--db", db, "serve", "--port", "0", "--no-token"], stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)
try:
    port = None
    for line in p.stdout:
        sys.stderr.write(line)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if m:
            port = m.group(1)
            break
    if port is None:
        sys.exit("serve printed no URL")
    print(urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60).read().decode())
finally:
    p.terminate()
    p.wait(60)
)";
  std::vector<std::string> argv = as_user;
  argv.insert(argv.end(), {"/usr/bin/python3", "-c", kDriver, DLSWEEP_BIN, db.string(), path});
  return run_command(argv, "/");
}
