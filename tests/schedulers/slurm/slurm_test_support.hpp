// slurm_test_support.hpp — helpers for the Slurm tests: a private local cluster started
// with scripts/slurm-local.sh (skipped with a warning where Slurm is missing), running
// Slurm commands against it, reading captured samples, and an event recorder.
#pragma once

#include "tests/support/temp_dir.hpp"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.hpp"
#include "schedulers/backend.hpp"
#include "schedulers/slurm/command.hpp"
#include "schedulers/slurm/driver.hpp"
#include "tests/support/run_until.hpp"
#include "tests/support/wait_until.hpp"

namespace slurm_test {

namespace fs = std::filesystem;

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

inline fs::path data_dir() { return fs::path(DLSWEEP_SOURCE_DIR) / "tests" / "schedulers" / "slurm" / "data"; }
inline std::string sample(const std::string& name) { return read_file(data_dir() / name); }

/// The tests' one temporary directory (tests/support/temp_dir.hpp); a local cluster's under
/// test_support::kShortTmp (munge's socket path must stay under 108 bytes).
using test_support::TempDir;
using test_support::kShortTmp;

/// Why no cluster can be started here, or nullopt if one can.
inline std::optional<std::string> cluster_unavailable() {
  for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"})
    if (access(p, X_OK) != 0) return std::string(p) + " is not installed (apt-get install slurmctld slurmd slurm-client munge)";
  if (geteuid() != 0) return std::string("starting a local Slurm cluster needs root");
  return std::nullopt;
}

/// A private Slurm cluster for one test: started in the constructor, stopped (every daemon
/// and job of it) in the destructor.
struct LocalCluster {
  TempDir dir{"dlsweep-slurm-c", kShortTmp};
  std::string conf;
  std::string start_output;
  bool up = false;
  int nodes = 1;
  int max_array = 1001;
  std::vector<std::string> limits;  ///< site limits for start: {"--max-job-count", "6", ...}

  explicit LocalCluster(int nodes_ = 1, int max_array_ = 1001, std::vector<std::string> limits_ = {})
      : nodes(nodes_), max_array(max_array_), limits(std::move(limits_)) {
    reap_stale();
    write_file(dir.path() / "owner", std::to_string(getpid()));
    conf = (dir.path() / "slurm.conf").string();
    up = start();
  }

  /// Stops clusters left behind by test processes that died before their destructor ran
  /// (killed by a timeout, a crash): their owner pid no longer exists.
  void reap_stale() const {
    std::error_code ec;
    for (auto& e : fs::directory_iterator("/tmp", ec)) {
      if (e.path().filename().string().rfind("dlsweep-slurm-c-", 0) != 0 || e.path() == dir.path()) continue;
      std::string owner = read_file(e.path() / "owner");
      if (owner.empty()) continue;
      pid_t pid = static_cast<pid_t>(std::stol(owner));
      if (kill(pid, 0) == 0 || errno != ESRCH) continue;
      dlsweep::sched::slurm::run_command({script_path(), "stop", "--dir", e.path().string()}, {}, 30);
      fs::remove_all(e.path(), ec);
    }
  }
  ~LocalCluster() { script("stop"); }

  std::string script_path() const { return std::string(DLSWEEP_SOURCE_DIR) + "/scripts/slurm-local.sh"; }

  dlsweep::Result<dlsweep::sched::slurm::CommandOutput> script(const std::string& verb) const {
    std::vector<std::string> argv = {script_path(), verb, "--dir", dir.path().string()};
    if (verb == "start") argv.insert(argv.end(), {"--nodes", std::to_string(nodes)});
    if (verb == "start") argv.insert(argv.end(), limits.begin(), limits.end());
    // The bound only stops a hang: with --max-submit-jobs a start also creates and starts a
    // MariaDB server and slurmdbd (30 s on a loaded 2-core machine).
    return dlsweep::sched::slurm::run_command(argv, {{"DLSWEEP_SLURM_MAX_ARRAY", std::to_string(max_array)}}, 180);
  }

  bool start() {
    auto r = script("start");
    if (!r) {
      start_output = r.error().message();
      return false;
    }
    start_output = r->out + r->err;
    return r->exit_code == 0 && r->out.find("SLURM_CONF=" + conf) != std::string::npos;
  }

  /// Runs a Slurm command against this cluster.
  dlsweep::sched::slurm::CommandOutput run(const std::vector<std::string>& argv, double timeout_s = 30) const {
    auto r = dlsweep::sched::slurm::run_command(argv, {{"SLURM_CONF", conf}}, timeout_s);
    return r ? *r : dlsweep::sched::slurm::CommandOutput{};
  }

  /// Sets the node's Prolog (`prolog` "" removes it) in this cluster's slurm.conf and reloads
  /// it (`scontrol reconfigure`). A Prolog that fails drains the node and holds the job
  /// ("launch failed requeued held").
  void set_prolog(const std::string& prolog) const {
    std::istringstream in(read_file(conf));
    std::string kept;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("Prolog=", 0) != 0) kept += line + "\n";
    if (!prolog.empty()) kept += "Prolog=" + prolog + "\n";
    write_file(conf, kept);
    run({"scontrol", "reconfigure"});
  }
  /// A Prolog script in the cluster's directory that always fails.
  std::string failing_prolog() const {
    const fs::path p = dir.path() / "prolog-fails.sh";
    write_file(p, "#!/bin/sh\nexit 1\n");
    fs::permissions(p, fs::perms::owner_all);
    return p.string();
  }

  /// Stops slurmctld only (SIGTERM to the pid in its pid file); jobs keep running.
  void stop_controller() const {
    std::string pid = read_file(dir.path() / "run" / "slurmctld.pid");
    if (pid.empty()) return;
    kill(std::stoi(pid), SIGTERM);
    test_support::wait_until([&] {  // until it is gone or a zombie
      std::string stat = read_file("/proc/" + std::to_string(std::stoi(pid)) + "/stat");
      auto close = stat.rfind(')');
      return stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z');
    });
  }
};

/// Records events per backend job id.
struct Recorder {
  std::vector<dlsweep::sched::JobEvent> events;
  dlsweep::sched::EventHandler handler() {
    return [this](const dlsweep::sched::JobEvent& ev) { events.push_back(ev); };
  }
  /// The job's lifecycle: its events but `pending` (whose number depends on the
  /// controller's timing: Priority, JobArrayTaskLimit, BeginTime, ...).
  std::vector<dlsweep::sched::JobEventKind> kinds(const std::string& id) const {
    std::vector<dlsweep::sched::JobEventKind> out;
    for (const auto& e : events)
      if (e.job_id == id && e.kind != dlsweep::sched::JobEventKind::pending) out.push_back(e.kind);
    return out;
  }
  /// The `pending` events of the job, in order.
  std::vector<dlsweep::sched::JobEvent> pending(const std::string& id) const {
    std::vector<dlsweep::sched::JobEvent> out;
    for (const auto& e : events)
      if (e.job_id == id && e.kind == dlsweep::sched::JobEventKind::pending) out.push_back(e);
    return out;
  }
  static bool is_terminal(dlsweep::sched::JobEventKind k) {
    using K = dlsweep::sched::JobEventKind;
    return k == K::exited || k == K::cancelled || k == K::lost;
  }
  const dlsweep::sched::JobEvent* terminal(const std::string& id) const {
    for (const auto& e : events)
      if (e.job_id == id && is_terminal(e.kind)) return &e;
    return nullptr;
  }
  int terminal_count(const std::string& id) const {
    int n = 0;
    for (const auto& e : events) n += e.job_id == id && is_terminal(e.kind) ? 1 : 0;
    return n;
  }
  bool has(const std::string& id, dlsweep::sched::JobEventKind k) const {
    for (const auto& e : events)
      if (e.job_id == id && e.kind == k) return true;
    return false;
  }
  bool all_done(const std::vector<std::string>& ids) const {
    for (const auto& id : ids)
      if (!terminal(id)) return false;
    return true;
  }
};

using test_support::run_until;  // tests/support/run_until.hpp

}  // namespace slurm_test
