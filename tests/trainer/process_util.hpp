// process_util.hpp — helpers for tests that run programs: spawn with stdout/stderr into
// files, wait, find a program on PATH, parse a metrics.jsonl.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"

extern char** environ;

namespace dlsweep::trainer::test {

struct Process {
  pid_t pid = -1;
  /// Exit status, or 128 + signal.
  int wait() {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

/// Starts `args[0]` (a path) with `args`, stdout/stderr into out_file/err_file. pid < 0 on failure.
inline Process spawn(const std::vector<std::string>& args, const std::filesystem::path& out_file,
                     const std::filesystem::path& err_file) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  Process p;
  if (posix_spawn(&p.pid, copy[0].c_str(), &fa, nullptr, argv.data(), environ) != 0) p.pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

/// The full path of `name` on PATH, or empty.
inline std::filesystem::path find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string dir; std::getline(ss, dir, ':');) {
    auto p = std::filesystem::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

/// Every complete record of a metrics.jsonl.
inline std::vector<protocol::Record> read_records(const std::filesystem::path& file) {
  std::vector<protocol::Record> out;
  std::istringstream in(read_file(file));
  for (std::string line; std::getline(in, line);)
    if (auto r = protocol::parse_record(line)) out.push_back(*r);
  return out;
}

/// The records of one kind.
inline std::vector<protocol::Record> records_of(const std::vector<protocol::Record>& rs, protocol::RecordKind k) {
  std::vector<protocol::Record> out;
  for (const auto& r : rs)
    if (r.kind == k) out.push_back(r);
  return out;
}

}  // namespace dlsweep::trainer::test
