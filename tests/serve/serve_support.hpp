// serve_support.hpp — the real `dlsweep serve` for the token and socket tests: a database with
// one study, the server started on it (TCP port 0 or a Unix socket) and its URL read back,
// and curl's answer as (exit code, HTTP status, body).
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../db/db_test_support.hpp"
#include "../e2e/run_command.hpp"
#include "child_process.hpp"

namespace dlsweep::serve::testing {

/// A database at `db` holding the study "alpha" (no trials).
inline void make_study_db(const std::filesystem::path& db) {
  auto w = dlsweep::db::testing::must(dlsweep::db::Storage::open_readwrite(db));
  dlsweep::db::testing::must(w->create_study(dlsweep::db::testing::study_named("alpha")));
}

/// `dlsweep --db DB serve ARGS...` in the background, its output in dir/NAME.out/.err.
struct Serving {
  std::filesystem::path out, err;
  std::unique_ptr<Child> child;
  ServeUrl url;

  Serving(const std::filesystem::path& dir, const std::string& name, const std::filesystem::path& db,
          const std::vector<std::string>& args, const std::filesystem::path& cwd = {})
      : out(dir / (name + ".out")), err(dir / (name + ".err")) {
    std::vector<std::string> argv = {DLSWEEP_BIN, "--db", db.string(), "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    child = std::make_unique<Child>(argv, out, err, cwd);
    url = wait_for_url(out, *child, 120);
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(url.port); }
  std::string log() const { return slurp(out) + slurp(err); }
};

struct CurlAnswer {
  int exit_code = -1;  ///< curl's: 0 answered, 7 could not connect
  int status = 0;      ///< HTTP status, 0 when none came
  std::string body, err;
};

/// curl with `args` (prefixed by `prefix`, e.g. runuser -u USER --); -s, status on the last line.
inline CurlAnswer curl(const std::vector<std::string>& args, const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> argv = prefix;
  for (const char* a : {"curl", "-s", "-S", "--max-time", "30", "-w", "\n%{http_code}"}) argv.emplace_back(a);
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv);
  CurlAnswer a;
  a.exit_code = r.exit_code;
  a.err = r.err;
  const auto nl = r.out.rfind('\n');
  if (nl != std::string::npos) {
    a.body = r.out.substr(0, nl);
    a.status = std::atoi(r.out.c_str() + nl + 1);
  }
  return a;
}

inline mode_t file_mode(const std::filesystem::path& p) {
  struct stat st{};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

}  // namespace dlsweep::serve::testing
