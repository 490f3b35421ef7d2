// slurm_submit.cpp — what submitting a sweep costs the Slurm controller.
//
// Submits N trivial jobs (/bin/true) through SlurmBackend to a real controller and reports:
//   - seconds from the first submit() until every job was accepted (sbatch returned),
//   - controller RPCs per trial for that submission (sdiag counters, reset before),
//   - controller RPCs per poll tick while the jobs are queued or running.
// Bars (DESIGN: arrays, batched polling): < 2 s and < 0.05 RPC/trial to submit 1000 jobs,
// <= 1 RPC per poll tick. Then it cancels every job (one call) and waits for the events.
//
// By default it starts a private cluster (scripts/slurm-local.sh, dir /tmp/dlsweep-slurm-bench)
// and stops it at the end; --conf uses an existing cluster instead.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/command.hpp"

namespace fs = std::filesystem;
using namespace dlsweep::sched;
using Clock = std::chrono::steady_clock;

#ifndef DLSWEEP_SOURCE_DIR
#define DLSWEEP_SOURCE_DIR "."
#endif

namespace {

std::string g_conf;

slurm::CommandOutput run(const std::vector<std::string>& argv) {
  auto r = slurm::run_command(argv, {{"SLURM_CONF", g_conf}}, 60);
  return r ? *r : slurm::CommandOutput{};
}

/// RPC counts by message type from `sdiag` (the controller's own statistics).
std::map<std::string, long> sdiag_counts() {
  std::map<std::string, long> out;
  std::istringstream in(run({"sdiag"}).out);
  std::string line;
  bool in_section = false;
  while (std::getline(in, line)) {
    if (line.find("statistics by message type") != std::string::npos) { in_section = true; continue; }
    if (line.find("statistics by user") != std::string::npos) break;
    if (!in_section) continue;
    std::istringstream ls(line);
    std::string name;
    ls >> name;
    auto c = line.find("count:");
    if (name.empty() || c == std::string::npos) continue;
    out[name] = std::stol(line.substr(c + 6));
  }
  return out;
}

/// RPCs sent by clients (sbatch, squeue, scancel, scontrol, libslurm) — not slurmd's own
/// reports (job completion, node registration) nor sdiag's.
long client_rpcs(const std::map<std::string, long>& c, std::string* detail) {
  static const std::set<std::string> kClient = {
      "REQUEST_SUBMIT_BATCH_JOB", "REQUEST_JOB_INFO",       "REQUEST_JOB_INFO_SINGLE", "REQUEST_JOB_USER_INFO",
      "REQUEST_KILL_JOB",         "REQUEST_CANCEL_JOB_STEP", "REQUEST_BUILD_INFO",     "REQUEST_UPDATE_JOB",
      "REQUEST_PARTITION_INFO",   "REQUEST_NODE_INFO",       "REQUEST_JOB_STEP_INFO",  "REQUEST_FED_INFO"};
  long n = 0;
  for (const auto& [name, count] : c) {
    if (!kClient.count(name)) continue;
    n += count;
    if (detail) *detail += fmt::format("{}{}={}", detail->empty() ? "" : ", ", name, count);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dlsweep benchmark: Slurm submission and polling cost"};
  int jobs = 1000;
  std::string driver = "cli";
  std::size_t max_concurrent = 4;
  double poll_s = 0.5;
  double poll_window_s = 6;
  std::string script = std::string(DLSWEEP_SOURCE_DIR) + "/scripts/slurm-local.sh";
  app.add_option("--jobs", jobs, "jobs to submit");
  app.add_option("--driver", driver, "cli or api");
  app.add_option("--max-concurrent", max_concurrent, "array throttle");
  app.add_option("--poll", poll_s, "poll interval (min = max) in seconds");
  app.add_option("--poll-window", poll_window_s, "seconds of polling to measure");
  app.add_option("--conf", g_conf, "SLURM_CONF of a running cluster (default: start a private one)");
  app.add_option("--script", script, "path of scripts/slurm-local.sh");
  CLI11_PARSE(app, argc, argv);

  const bool own_cluster = g_conf.empty();
  const std::string cluster_dir = "/tmp/dlsweep-slurm-bench";
  if (own_cluster) {
    auto r = slurm::run_command({script, "start", "--dir", cluster_dir}, {}, 60);
    if (!r || r->exit_code != 0) {
      std::fprintf(stderr, "cannot start a local cluster: %s%s\n", r ? r->err.c_str() : r.error().message().c_str(),
                   r ? r->out.c_str() : "");
      return 1;
    }
    g_conf = cluster_dir + "/slurm.conf";
  }
  int rc = 0;
  {
    char tmpl[] = "/tmp/dlsweep-bench-XXXXXX";
    fs::path work = mkdtemp(tmpl);
    boost::asio::io_context io;
    SlurmOptions o;
    o.driver = driver;
    o.slurm_conf = g_conf;
    o.script_dir = work / "slurm";
    o.max_concurrent = max_concurrent;
    o.poll_min_s = o.poll_max_s = poll_s;
    auto made = SlurmBackend::create(io, o);
    if (!made) {
      std::fprintf(stderr, "%s\n", made.error().message().c_str());
      return 1;
    }
    auto& backend = **made;
    std::size_t accepted = 0, ended = 0;
    Clock::time_point all_accepted;
    backend.set_event_handler([&](const JobEvent& ev) {
      if (ev.kind == JobEventKind::queued && ++accepted == static_cast<std::size_t>(jobs)) all_accepted = Clock::now();
      if (ev.kind == JobEventKind::exited || ev.kind == JobEventKind::cancelled || ev.kind == JobEventKind::lost) ++ended;
    });
    backend.set_log_handler([](const std::string& m) { std::fprintf(stderr, "backend: %s\n", m.c_str()); });

    run({"sdiag", "-r"});
    const auto t0 = Clock::now();
    std::vector<std::string> ids;
    for (int i = 0; i < jobs; ++i) {
      JobSpec s;
      s.study = "bench";
      s.trial_id = i;
      s.argv = {"/bin/true"};
      s.workdir = work / fmt::format("trial-{:04d}", i);
      ids.push_back(backend.submit(s).value());
    }
    while (accepted < static_cast<std::size_t>(jobs) && Clock::now() - t0 < std::chrono::seconds(60)) io.run_one_for(std::chrono::milliseconds(5));
    const double submit_s = std::chrono::duration<double>(all_accepted - t0).count();
    std::string submit_detail;
    const long submit_rpcs = client_rpcs(sdiag_counts(), &submit_detail);

    // Polling: reset, let the backend poll for a while, count.
    run({"sdiag", "-r"});
    const auto queries0 = backend.stats().queries;
    const auto p0 = Clock::now();
    while (Clock::now() - p0 < std::chrono::duration<double>(poll_window_s)) io.run_one_for(std::chrono::milliseconds(20));
    std::string poll_detail;
    const long poll_rpcs = client_rpcs(sdiag_counts(), &poll_detail);
    const auto ticks = backend.stats().queries - queries0;

    run({"sdiag", "-r"});
    for (const auto& id : ids) backend.cancel(id);
    const auto c0 = Clock::now();
    while (ended < static_cast<std::size_t>(jobs) && Clock::now() - c0 < std::chrono::seconds(120)) io.run_one_for(std::chrono::milliseconds(20));
    std::string cancel_detail;
    const long cancel_rpcs = client_rpcs(sdiag_counts(), &cancel_detail);

    std::printf("slurm submit benchmark (driver %s, %d jobs of /bin/true, throttle %zu, MaxArraySize %zu)\n",
                driver.c_str(), jobs, max_concurrent, backend.stats().max_array_size);
    std::printf("  submit: %.3f s until all accepted, %zu sbatch call(s), %ld controller RPCs = %.4f RPC/trial  [%s]\n",
                submit_s, backend.stats().submissions, submit_rpcs, double(submit_rpcs) / jobs, submit_detail.c_str());
    std::printf("  poll:   %zu ticks in %.1f s, %ld controller RPCs = %.2f RPC/tick  [%s]\n", ticks, poll_window_s,
                poll_rpcs, ticks ? double(poll_rpcs) / ticks : 0.0, poll_detail.c_str());
    std::printf("  cancel: %zu cancel call(s) for %d jobs, %ld controller RPCs (incl. polls until all ended)  [%s]\n",
                backend.stats().cancel_calls, jobs, cancel_rpcs, cancel_detail.c_str());
    std::printf("  ended:  %zu of %d jobs reported terminal\n", ended, jobs);
    const bool ok = submit_s < 2.0 && double(submit_rpcs) / jobs < 0.05 && ticks > 0 && poll_rpcs <= long(ticks);
    std::printf("  bar (< 2 s, < 0.05 RPC/trial, <= 1 RPC/tick): %s\n", ok ? "met" : "NOT met");
    std::printf("reproduce: bench_slurm_submit --jobs %d --driver %s --max-concurrent %zu --poll %g\n", jobs,
                driver.c_str(), max_concurrent, poll_s);
    rc = ok && ended == static_cast<std::size_t>(jobs) ? 0 : 1;
    std::error_code ec;
    fs::remove_all(work, ec);
  }
  if (own_cluster) slurm::run_command({script, "stop", "--dir", cluster_dir}, {}, 60);
  return rc;
}
