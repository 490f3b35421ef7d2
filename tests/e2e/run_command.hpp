// run_command.hpp — test helper: runs a command line through /bin/sh (arguments quoted
// with shell_quote), capturing exit code, stdout and stderr.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

/// Runs argv in `cwd` with extra environment assignments ("K=V").
CommandResult run_command(const std::vector<std::string>& argv, const std::filesystem::path& cwd = {},
                          const std::vector<std::string>& env = {});

/// A fresh, empty directory under the system temp dir, unique to this process and `name`.
std::filesystem::path fresh_dir(const std::string& name);

/// Starts `dlsweep --db DB args...` in `dir` without waiting (stderr to `err`, /dev/null by
/// default); returns its pid (the caller waits for or kills it), or -1 when fork failed.
int spawn_dlsweep(const std::filesystem::path& dir, const std::filesystem::path& db, std::vector<std::string> args,
                  const std::filesystem::path& err = "/dev/null");

/// Waits until `p` exists (polling; a trial's file that marks the moment a test waits for),
/// at most `limit`; true when it does.
bool wait_for(const std::filesystem::path& p, std::chrono::seconds limit = std::chrono::seconds(60));

/// Runs `dlsweep --db DB args...` in `cwd`.
CommandResult run_dlsweep(const std::filesystem::path& db, const std::vector<std::string>& args,
                      const std::filesystem::path& cwd = {});

/// Starts `dlsweep --db DB serve --port 0 --no-token` (after `as_user`, e.g. {"runuser", "-u",
/// NAME, "--"}: as another user), GETs `path` from the URL it prints, prints the body to out
/// and stops the server; exit 0 when all of that worked.
CommandResult serve_get(const std::filesystem::path& db, const std::string& path,
                        const std::vector<std::string>& as_user = {});
