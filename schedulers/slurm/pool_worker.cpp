// pool_worker.cpp — see pool_worker.hpp.
#include "schedulers/slurm/pool_worker.hpp"
#include "schedulers/pilot_worker.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <thread>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "common/protocol.hpp"
#include "schedulers/process_spawn.hpp"
#include "schedulers/slurm/pool_lease.hpp"
#include "schedulers/slurm/pool_rerun.hpp"
#include "schedulers/slurm/worker_signals.hpp"
#include "schedulers/warm_runner.hpp"

namespace dlsweep::sched::pool {

namespace fs = std::filesystem;

namespace {

// What the worker was told, by signal: USR2 (the allocation's time-limit warning), TERM or
// INT (stop). Set by wait_s(), which reads them from the signalfd (worker_signals.hpp).
bool g_usr2 = false;
bool g_term = false;
WorkerSignals* g_signals = nullptr;

/// Seconds since the epoch (the allocation's end, the run's start: shared with other hosts).
double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// Seconds on the monotonic clock: every duration the worker measures (timeouts, grace
/// periods, idle time), which a wall-clock step must not stretch or cut short.
double mono_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string hostname() { return this_host(); }

/// Waits up to `s` seconds, returning at once when a signal comes (a child's end included).
void wait_s(double s) {
  if (!g_signals) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
    return;
  }
  const WorkerSignals::Seen seen = g_signals->wait(s);
  g_usr2 = g_usr2 || seen.usr2;
  g_term = g_term || seen.term;
}

/// Whether a child that ended with wait status `status` died of a TERM: killed by it, or
/// exited 143 (128 + TERM: what a shell, the trial's batch script included, exits with then).
bool ended_by_term(int status) {
  return (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) ||
         (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM);
}

/// After a child of the worker died of a TERM the worker did not send: whether the worker
/// was told to stop too. The end of the allocation (scancel, a requeue, a preemption, the
/// time limit) TERMs every process of the job at once: the trial may die of it before the
/// worker has read its own TERM. Its TERM is waited for a moment (it is on its way), so that
/// the trial is taken for stopped with the worker — not recorded, queued again — and not for
/// a trial that failed with exit 143.
bool told_to_stop_too() {
  const double until = mono_s() + 1.0;
  while (!g_term && g_signals && mono_s() < until) wait_s(until - mono_s());
  return g_term;
}

/// The worker's TERM came with its allocation's end (its time limit: slurmctld TERMs at the
/// limit, never before; 5 s of slack for the nodes' clocks). A trial stopped then had its
/// time-limit warning and did not leave with a checkpoint (exit 75): queued again it would
/// start over on the next worker and meet the same end, for ever. Its end is recorded (the
/// signal's exit: a failed attempt, retried under max_retries) instead.
bool at_allocation_end(const WorkerConfig& c) { return c.end_time > 0 && now_s() >= c.end_time - 5.0; }

/// The trial's batch script reads its index line at ${SLURM_ARRAY_TASK_ID:-0}: the worker's
/// own array task is not the trial's, so these are not passed on.
const std::vector<std::string> kArrayVariables{"SLURM_ARRAY_TASK_ID",  "SLURM_ARRAY_JOB_ID",   "SLURM_ARRAY_TASK_COUNT",
                                               "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP"};

/// The exit record of a trial whose script could not be started at all (distinct from the
/// script's own exit 127).
ExitRecord not_started(const Error& e) {
  ExitRecord rec;
  rec.exit_code = 127;
  rec.not_started = true;
  rec.error = e.message();
  return rec;
}

enum class Outcome { recorded, abandoned };

/// Runs one claimed task to its end. `abandoned`: the worker was told to stop (TERM) and the
/// trial's end is deliberately not recorded.
Outcome run_task(const WorkerConfig& c, const PoolDir& pool, const std::string& tag, const TaskFile& task,
                 bool& warned_out, const std::function<void(const std::string&)>& log) {
  const double t0 = mono_s(), started_at = now_s();
  // Still ours? The orchestrator may have put the task back meanwhile (it took this worker's
  // allocation for gone): then another worker may hold it, and this one must not start it.
  std::error_code gone_ec;
  if (!fs::is_directory(pool.claimed_dir(c.id, tag), gone_ec)) {
    log(fmt::format("{}: no longer this worker's (put back meanwhile): not started", tag));
    return Outcome::abandoned;
  }
  // The run's lease: the trial's processes inherit it (pool_lease.hpp).
  const fs::path lease_file = pool.in_worker(c.id, tag, ".lease");
  auto lease = Lease::take(lease_file);
  if (!lease)
    log(fmt::format("{}: no lease ({}): a rerun after this worker's death can check only the process group, on "
                    "this host",
                    tag, lease.error().message()));
  // The project's spawner: no shell, a process group of its own, stdin from /dev/null, the
  // script's own output appended to the worker's logs, and an exec failure told apart.
  auto spawned = spawn_process({"/bin/bash", task.script.string()}, pool.worker_dir(c.id),
                               {{"DLSWEEP_WORKER", c.id}}, /*die_with_parent=*/false, kArrayVariables,
                               lease ? lease->fd() : -1);
  if (!spawned) {
    std::error_code ec;
    fs::remove(lease_file, ec);
    pool.write_exit(c.id, tag, not_started(spawned.error()));
    log(fmt::format("{}: could not start its script: {}", tag, spawned.error().message()));
    return Outcome::recorded;
  }
  const pid_t child = *spawned;
  std::string lease_name;
  if (lease) {
    lease_name = pool.lease_name(lease_file);
    lease->close();  // held by the trial's processes alone from here
  }
  if (auto st = pool.write_run(c.id, tag, RunRecord{hostname(), static_cast<long>(child), started_at, lease_name});
      !st) {
    // Unrecorded, the run could go on beside a rerun nobody told to wait for it: stopped now.
    ::kill(-child, SIGKILL);
    int ignored = 0;
    ::waitpid(child, &ignored, 0);
    log(fmt::format("{}: {}: stopped at once, not recorded", tag, st.error().message()));
    return Outcome::abandoned;
  }
  log(fmt::format("{} ({}): started, process group {}", tag, task.token, child));
  ExitRecord rec;
  double kill_at = 0, next_cancel_check = 0;
  int status = 0;
  bool abandoning = false;
  for (;;) {
    pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) break;
    const double t = mono_s();
    if (g_usr2 && !rec.warned) {
      rec.warned = true;
      ::kill(child, SIGUSR2);  // the script passes it on to the trial, as in a per-trial job
      log(fmt::format("{}: time-limit warning passed on", tag));
    }
    if (g_term && !abandoning) {
      abandoning = true;
      ::kill(child, SIGTERM);
      kill_at = t + std::min(c.grace_s, 5.0);
    }
    if (!rec.cancelled && !abandoning && t >= next_cancel_check) {
      next_cancel_check = t + 0.5;
      std::error_code ec;
      if (fs::exists(pool.in_worker(c.id, tag, ".cancel"), ec)) {
        rec.cancelled = true;
        ::kill(child, SIGTERM);
        kill_at = t + c.grace_s;
        log(fmt::format("{}: cancelled", tag));
      }
    }
    if (task.timeout_s > 0 && !rec.timed_out && !rec.cancelled && t - t0 > task.timeout_s) {
      rec.timed_out = true;
      ::kill(child, SIGTERM);
      kill_at = t + c.grace_s;
      log(fmt::format("{}: timed out after {:.0f} s", tag, task.timeout_s));
    }
    if (kill_at > 0 && t >= kill_at) {
      ::kill(-child, SIGKILL);
      kill_at = 0;
    }
    // Until the next thing to look at: the cancel file, the timeout, the kill; the child's
    // end and a signal wake it at once.
    double next = next_cancel_check;
    if (task.timeout_s > 0 && !rec.timed_out) next = std::min(next, t0 + task.timeout_s);
    if (kill_at > 0) next = std::min(next, kill_at);
    wait_s(std::clamp(next - t, 0.001, 0.5));
  }
  // Died of the allocation's TERM, which reached it before the worker read its own?
  if (!abandoning && !rec.cancelled && !rec.timed_out && ended_by_term(status) && told_to_stop_too()) {
    abandoning = true;
    log(fmt::format("{}: ended by the TERM that stops this worker", tag));
  }
  if (abandoning && !rec.cancelled && !rec.timed_out && at_allocation_end(c)) {
    abandoning = false;
    log(fmt::format("{}: stopped at the allocation's time limit without a checkpoint{}: its end is recorded (queued "
                    "again it would start over and meet the same limit)",
                    tag, rec.warned ? " (the warning was passed on)" : ""));
  }
  ::kill(-child, SIGKILL);  // what the trial left behind in its group
  rec.seconds = mono_s() - t0;
  if (WIFEXITED(status))
    rec.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    rec.signal = WTERMSIG(status);
  if (abandoning) {
    // The lease stays: the rerun checks it (free, once the group is gone).
    log(fmt::format("{}: stopped with the worker; not recorded (the orchestrator queues it again)", tag));
    return Outcome::abandoned;
  }
  std::error_code ec;
  fs::remove(lease_file, ec);  // its end is recorded: no rerun waits on it
  warned_out = rec.warned;
  if (auto st = pool.write_exit(c.id, tag, rec); !st) log(fmt::format("{}: {}", tag, st.error().message()));
  log(fmt::format("{}: ended (exit {}, signal {}) after {:.1f} s", tag, rec.exit_code, rec.signal, rec.seconds));
  return Outcome::recorded;
}

/// A `python3 -m dlsweep_optuna ... --serve DIR` kept imported between trials.
struct WarmServer {
  pid_t pid = 0;
  fs::path dir;
  long seq = 0;
  std::string lease;  ///< the server's lease (relative to the pool): its trials' runs name it
};
using WarmServers = std::map<std::string, WarmServer>;

/// `keep_lease`: the worker is stopping with a trial of the server unrecorded, whose rerun checks it.
void stop_server(const PoolDir& pool, WarmServer& s, double grace_s, bool keep_lease = false) {
  warm::request_stop(s.dir);
  const double until = mono_s() + grace_s;
  int status = 0;
  while (::waitpid(s.pid, &status, WNOHANG) == 0) {
    if (mono_s() > until) {
      ::kill(-s.pid, SIGKILL);
      ::waitpid(s.pid, &status, 0);
      break;
    }
    wait_s(0.02);
  }
  ::kill(-s.pid, SIGKILL);  // anything it left in its group
  std::error_code ec;
  if (!s.lease.empty() && !keep_lease) fs::remove(pool.lease_path(s.lease), ec);
}

std::optional<WarmServer> start_server(const WorkerConfig& c, const PoolDir& pool, const TaskFile& task, long n,
                                       const std::function<void(const std::string&)>& log, Error& error) {
  WarmServer s;
  s.dir = pool.worker_dir(c.id) / ("py-" + std::to_string(n));
  std::error_code ec;
  fs::remove_all(s.dir, ec);
  fs::create_directories(s.dir, ec);
  if (ec) {
    log("cannot create " + s.dir.string() + ": " + ec.message());
    error = Error{"cannot create " + s.dir.string() + ": " + ec.message(), s.dir.string(), "check the pool directory"};
    return std::nullopt;
  }
  std::vector<std::string> argv = warm::server_argv(task.argv, s.dir);
  // The server's lease, held by it and whatever it starts: a rerun of a trial it ran waits
  // until all of that is gone.
  const fs::path lease_file = s.dir.string() + ".lease";
  auto lease = Lease::take(lease_file);
  if (!lease) log(fmt::format("kept-imported runner: no lease ({})", lease.error().message()));
  // Started in the first trial's directory: until it takes that trial, what it prints (an
  // import error) goes to the trial's logs.
  std::map<std::string, std::string> env = task.env;
  env["DLSWEEP_WORKER"] = c.id;
  auto spawned = spawn_process(argv, task.trial_dir, env, /*die_with_parent=*/false, kArrayVariables,
                               lease ? lease->fd() : -1);
  if (!spawned) {
    fs::remove(lease_file, ec);
    log(fmt::format("kept-imported runner: {}", spawned.error().message()));
    error = spawned.error();
    return std::nullopt;
  }
  const pid_t pid = *spawned;
  s.pid = pid;
  if (lease) {
    s.lease = pool.lease_name(lease_file);
    lease->close();
  }
  log(fmt::format("kept-imported runner started (pid {}): {}", pid, fmt::join(argv, " ")));
  return s;
}

/// run_task for a task kept imported: handed to its server (started when there is none)
/// through job.json, its end read from done.json — or from the server's own end.
Outcome run_warm_task(const WorkerConfig& c, const PoolDir& pool, const std::string& tag, const TaskFile& task,
                      WarmServers& servers, const std::function<void(const std::string&)>& log) {
  const double t0 = mono_s(), started_at = now_s();
  const std::string key = warm::share_key(task.argv, task.env);
  static long started = 0;
  if (auto it = servers.find(key); it != servers.end()) {
    int st = 0;
    if (::waitpid(it->second.pid, &st, WNOHANG) != 0) servers.erase(it);  // it died between trials
  }
  std::error_code ec;
  fs::remove(task.trial_dir / protocol::kPreemptHandlerFile, ec);  // each run asks anew, as in the script
  if (!servers.count(key)) {
    Error error;
    auto s = start_server(c, pool, task, ++started, log, error);
    if (!s) {
      pool.write_exit(c.id, tag, not_started(error));
      return Outcome::recorded;
    }
    servers[key] = *s;
  }
  WarmServer& s = servers[key];
  const long seq = ++s.seq;
  warm::hand_over(s.dir, seq, task.trial_dir, task.env);
  if (auto st = pool.write_run(c.id, tag, RunRecord{hostname(), static_cast<long>(s.pid), started_at, s.lease}); !st) {
    // As in run_task: an unrecorded run must not go on; the runner goes with it.
    ::kill(-s.pid, SIGKILL);
    int ignored = 0;
    ::waitpid(s.pid, &ignored, 0);
    servers.erase(key);
    log(fmt::format("{}: {}: stopped at once, not recorded", tag, st.error().message()));
    return Outcome::abandoned;
  }
  log(fmt::format("{} ({}): handed to the kept-imported runner (pid {}, trial {} of it)", tag, task.token, s.pid, seq));
  ExitRecord rec;
  double kill_at = 0, next_check = 0;
  bool server_gone = false;
  for (;;) {
    const double t = mono_s();
    int status = 0;
    if (::waitpid(s.pid, &status, WNOHANG) == s.pid) {
      server_gone = true;
      if (!rec.cancelled && !rec.timed_out && ended_by_term(status) && told_to_stop_too()) {
        // The allocation's TERM reached the runner first (as in run_task): stopped with the
        // worker, not recorded; its lease stays for the rerun to check.
        ::kill(-s.pid, SIGKILL);
        servers.erase(key);
        log(fmt::format("{}: stopped with the worker; not recorded (the orchestrator queues it again)", tag));
        return Outcome::abandoned;
      }
      if (WIFEXITED(status))
        rec.exit_code = WEXITSTATUS(status);
      else if (WIFSIGNALED(status))
        rec.signal = WTERMSIG(status);
      break;
    }
    if (t >= next_check) {
      next_check = t + 0.02;
      if (auto code = warm::finished(s.dir, seq)) {
        rec.exit_code = *code;
        break;
      }
    }
    if (g_usr2 && !rec.warned && fs::exists(task.trial_dir / protocol::kPreemptHandlerFile, ec)) {
      rec.warned = true;  // as the script: only once the program asked for it (on_preempt)
      ::kill(s.pid, SIGUSR2);
      log(fmt::format("{}: time-limit warning passed on", tag));
    }
    if (g_term) {
      ::kill(-s.pid, SIGTERM);
      stop_server(pool, s, std::min(c.grace_s, 5.0), /*keep_lease=*/true);
      servers.erase(key);
      log(fmt::format("{}: stopped with the worker; not recorded (the orchestrator queues it again)", tag));
      return Outcome::abandoned;
    }
    if (!rec.cancelled && !rec.timed_out && kill_at == 0) {
      if (fs::exists(pool.in_worker(c.id, tag, ".cancel"), ec)) {
        rec.cancelled = true;
        log(fmt::format("{}: cancelled", tag));
      } else if (task.timeout_s > 0 && t - t0 > task.timeout_s) {
        rec.timed_out = true;
        log(fmt::format("{}: timed out after {:.0f} s", tag, task.timeout_s));
      }
      if (rec.cancelled || rec.timed_out) {
        ::kill(s.pid, SIGTERM);
        kill_at = t + c.grace_s;
      }
    }
    if (kill_at > 0 && t >= kill_at) {
      ::kill(-s.pid, SIGKILL);
      kill_at = t + 3600;
    }
    wait_s(0.01);  // done.json is a file: looked at every 10 ms; a signal or the runner's end wakes it
  }
  if (server_gone) {
    ::kill(-s.pid, SIGKILL);
    if (!s.lease.empty()) fs::remove(pool.lease_path(s.lease), ec);
    servers.erase(key);
  }
  rec.seconds = mono_s() - t0;
  if (auto st = pool.write_exit(c.id, tag, rec); !st) log(fmt::format("{}: {}", tag, st.error().message()));
  log(fmt::format("{}: ended (exit {}, signal {}) after {:.1f} s", tag, rec.exit_code, rec.signal, rec.seconds));
  return Outcome::recorded;
}

enum class Clearance { clear, cancelled, stopping };

/// Before a task that ran before and whose end no worker saw (TaskFile::unfinished_runs)
/// starts again: waits until every such run is gone (pool_rerun.hpp decides, from its lease
/// and, on this host, its process group). Meanwhile a cancel ends the wait (the task is
/// recorded cancelled without running) and TERM stops the worker (nothing recorded). Once
/// clear, the claimed task file is rewritten without those runs and their leases removed:
/// a later rerun waits only for this worker's run.
Clearance wait_for_earlier_runs(const WorkerConfig& c, const PoolDir& pool, const std::string& tag, TaskFile& task,
                                const std::function<void(const std::string&)>& log) {
  if (task.unfinished_runs.empty()) return Clearance::clear;
  const std::string host = hostname();
  const double since = mono_s();
  double next_log = 0;
  std::string last_why;
  for (;;) {
    std::vector<EarlierRunSeen> seen;
    for (const auto& r : task.unfinished_runs) {
      EarlierRunSeen e;
      e.lease = r.lease.empty() ? LeaseState::missing : probe_lease(pool.lease_path(r.lease));
      e.same_host = r.host == host;
      e.group_alive = e.same_host && group_has_live_process(r.pgid);
      seen.push_back(e);
    }
    const RerunDecision d = decide_rerun(task.unfinished_runs, seen);
    const double t = mono_s();
    if (d.verdict != RerunVerdict::wait) {
      log(fmt::format("{}: ran before without an end; {}{}", tag, d.why,
                      t - since > 0.5 ? fmt::format(" (waited {:.1f} s)", t - since) : ""));
      std::error_code ec;
      for (const auto& r : task.unfinished_runs)
        if (!r.lease.empty()) fs::remove(pool.lease_path(r.lease), ec);
      task.unfinished_runs.clear();
      if (auto st = pool.write_claimed(c.id, tag, task); !st) log(fmt::format("{}: {}", tag, st.error().message()));
      return Clearance::clear;
    }
    if (t >= next_log || d.why != last_why) {
      log(fmt::format("{}: waiting before it starts again: {}", tag, d.why));
      next_log = t + 30;
      last_why = d.why;
    }
    if (g_term) {
      log(fmt::format("{}: stopping (TERM) before it started; not recorded", tag));
      return Clearance::stopping;
    }
    std::error_code ec;
    if (fs::exists(pool.in_worker(c.id, tag, ".cancel"), ec)) {
      log(fmt::format("{}: cancelled before it started again", tag));
      return Clearance::cancelled;
    }
    wait_s(std::max(c.poll_s, 0.05));
  }
}

}  // namespace

double allocation_end_from_env() {
  if (const char* e = std::getenv("SLURM_JOB_END_TIME")) {
    char* end = nullptr;
    double v = std::strtod(e, &end);
    if (end != e && v > 0) return v;
  }
  return 0;
}

namespace {

/// Tasks already in this worker's own directory with no end recorded, when it starts: an
/// earlier start of the same allocation took them (Slurm requeued the job — an admin's
/// `scontrol requeue`, a preemption — and runs its batch script again from the start, as
/// the same worker) and was stopped before it could record their end. The orchestrator leaves
/// a task with its worker while the worker's job lives (in any state that is not final), so
/// no other worker would ever run them: this start runs them first. A run of the earlier start
/// goes into the task's unfinished runs (its run record removed: it is not this start's), so
/// the task starts again only once every process of that run is gone, as a task put back in
/// the queue would. Returns their tags, in the order they were taken.
std::vector<std::string> take_back_own_tasks(const WorkerConfig& c, const PoolDir& pool,
                                             const std::function<void(const std::string&)>& log) {
  std::vector<std::string> out;
  for (const auto& claim : pool.claims()) {
    if (claim.worker != c.id || claim.has_exit) continue;
    const std::string& tag = claim.tag;
    auto task = PoolDir::read_task(pool.in_worker(c.id, tag, ".task"));
    if (!task) {
      log(fmt::format("{}: held by this worker from an earlier start, unreadable ({}): left for the orchestrator", tag,
                      task.error().message()));
      continue;
    }
    if (claim.has_run) {
      auto run = PoolDir::read_run(pool.in_worker(c.id, tag, ".run"));
      if (!run) {
        // Without its process group and lease nothing can tell when that run is gone.
        log(fmt::format("{}: held by this worker from an earlier start, its run record unreadable ({}): left for the "
                        "orchestrator",
                        tag, run.error().message()));
        continue;
      }
      task->unfinished_runs.push_back(*run);
      if (auto st = pool.write_claimed(c.id, tag, *task); !st) {
        log(fmt::format("{}: {}: left for the orchestrator", tag, st.error().message()));
        continue;
      }
      std::error_code ec;
      fs::remove(pool.in_worker(c.id, tag, ".run"), ec);
      log(fmt::format("{}: started by an earlier start of this worker (its allocation was requeued) and never ended: "
                      "running it again",
                      tag));
    } else {
      log(fmt::format("{}: taken by an earlier start of this worker (its allocation was requeued) and never started: "
                      "running it",
                      tag));
    }
    out.push_back(tag);
  }
  return out;
}

int worker_loop(const WorkerConfig& c, WarmServers& servers, const std::function<void(const std::string&)>& log) {
  const PoolDir pool(c.pool);
  std::error_code ec;
  fs::create_directories(pool.worker_dir(c.id), ec);
  if (ec) {
    log("cannot create " + pool.worker_dir(c.id).string() + ": " + ec.message());
    return 1;
  }
  if (auto st = pool.check_version(); !st) {
    log(st.error().message());
    return 2;
  }
  log(fmt::format("worker {} on {}: {} task(s){}", c.id, hostname(), c.ranks,
                  c.end_time > 0 ? fmt::format(", allocation ends in {:.0f} s", c.end_time - now_s()) : ""));
  double idle_since = mono_s(), next_beat = 0;
  const double started_at = c.start_time > 0 ? c.start_time : now_s();
  std::size_t ran = 0;
  std::set<std::string> unreadable;
  // Idle, the queue is looked at every poll_s at first, backing off to a second (a shared
  // filesystem's metadata server thanks it); a task taken resets it.
  double idle_poll_s = c.poll_s;
  enum class Next { go_on, stop };
  // A task this worker holds: run once every earlier run of it is gone (or recorded
  // cancelled, when a cancel comes first).
  auto run_claimed = [&](const std::string& tag, TaskFile& task) {
    const Clearance clear = wait_for_earlier_runs(c, pool, tag, task, log);
    if (clear == Clearance::stopping) return Next::stop;
    if (clear == Clearance::cancelled) {
      ExitRecord rec;
      rec.cancelled = true;
      if (auto st = pool.write_exit(c.id, tag, rec); !st) log(fmt::format("{}: {}", tag, st.error().message()));
      idle_since = mono_s();
      return Next::go_on;
    }
    bool warned = false;
    auto outcome = task.warm ? run_warm_task(c, pool, tag, task, servers, log) : run_task(c, pool, tag, task, warned, log);
    ++ran;
    idle_since = mono_s();
    return outcome == Outcome::abandoned ? Next::stop : Next::go_on;
  };
  for (const auto& tag : take_back_own_tasks(c, pool, log)) {
    auto task = PoolDir::read_task(pool.in_worker(c.id, tag, ".task"));
    if (!task) continue;  // put back meanwhile (the orchestrator took this worker's job for gone)
    if (fs::exists(pool.in_worker(c.id, tag, ".cancel"), ec)) {
      // The orchestrator asked to stop it meanwhile: recorded cancelled, not run again.
      ExitRecord rec;
      rec.cancelled = true;
      if (auto st = pool.write_exit(c.id, tag, rec); !st) log(fmt::format("{}: {}", tag, st.error().message()));
      log(fmt::format("{}: cancelled before it started again", tag));
      continue;
    }
    if (run_claimed(tag, *task) == Next::stop) return 0;
  }
  for (;;) {
    const double t = now_s();
    if (t >= next_beat) {
      write_file_atomic(pool.worker_dir(c.id) / "heartbeat", fmt::format("{:.3f} {}\n", t, ran), Durability::none);
      next_beat = t + 5;
    }
    // A signal that came while a trial ended (the waits read them; the last one may not
    // have): a worker told to stop takes no other trial.
    if (g_signals) wait_s(0);
    if (g_term) {
      log("stopping (TERM)");
      return 0;
    }
    if (g_usr2) {
      log("time-limit warning: taking no more trials");
      return 0;
    }
    bool claimed = false, skipped_time = false, skipped_ranks = false;
    double needed = 0;
    const double longest = pool.estimate_s();
    for (const auto& tag : pool.queued_tags()) {
      auto task = PoolDir::read_task(pool.queued(tag));
      if (!task) {
        // Taken meanwhile (gone), or a record this worker cannot use: said once, left for the
        // orchestrator (which re-queues what it cannot read).
        if (fs::exists(pool.queued(tag), ec) && unreadable.insert(tag).second) log(task.error().message());
        continue;
      }
      if (task->ranks > c.ranks) {
        skipped_ranks = true;
        continue;
      }
      const double est = std::max(task->estimate_s, longest);
      if (c.end_time > 0 && est > 0 && t + est + c.margin_s > c.end_time &&
          (ran > 0 || est + c.margin_s <= c.end_time - started_at)) {
        skipped_time = true;
        needed = est;
        continue;
      }
      if (!pool.claim(tag, c.id)) continue;
      claimed = true;
      // What this worker now holds (the orchestrator wrote it before it went back to the queue).
      if (auto mine = PoolDir::read_task(pool.in_worker(c.id, tag, ".task"))) task = std::move(mine);
      if (run_claimed(tag, *task) == Next::stop) return 0;
      break;
    }
    if (claimed) {
      idle_poll_s = c.poll_s;
      continue;
    }
    if (skipped_time) {
      log(fmt::format("retiring after {} trial(s): {:.0f} s left, a waiting trial needs about {:.0f} s", ran,
                      c.end_time - t, needed));
      return 0;
    }
    if (skipped_ranks) {
      log(fmt::format("retiring after {} trial(s): the waiting trials need more than this allocation's {} task(s)", ran,
                      c.ranks));
      return 0;
    }
    if (fs::exists(pool.stop_file(), ec)) {
      log(fmt::format("no more work (stop): exiting after {} trial(s)", ran));
      return 0;
    }
    if (mono_s() - idle_since > c.idle_s) {
      log(fmt::format("idle for {:.0f} s: exiting after {} trial(s)", c.idle_s, ran));
      return 0;
    }
    wait_s(idle_poll_s);
    idle_poll_s = std::min(std::max(c.poll_s, 1.0), idle_poll_s * 2);
  }
}

}  // namespace

int run_worker(const WorkerConfig& c, const std::function<void(const std::string&)>& log) {
  // Signals are read from a signalfd by the waits (wait_s), never by handlers: the loop
  // sleeps in poll() and wakes at once for a signal or a child's end.
  WorkerSignals signals;
  g_signals = &signals;
  g_usr2 = g_term = false;
  WarmServers servers;
  const int rc = worker_loop(c, servers, log);
  for (auto& [key, s] : servers) stop_server(PoolDir(c.pool), s, 5);
  g_signals = nullptr;
  return rc;
}

}  // namespace dlsweep::sched::pool

namespace dlsweep::sched {

int run_pilot_worker(const PilotWorkerArgs& a) {
  pool::WorkerConfig c;
  c.pool = a.pool;
  c.id = a.id;
  if (c.id.empty() || c.id.find('/') != std::string::npos || c.id.find("..") != std::string::npos) {
    fmt::print(stderr, "dlsweep worker: --id '{}' is not a worker name (w1, w2, ...)\n", c.id);
    return 2;
  }
  c.ranks = a.ranks;
  if (c.ranks <= 0) {
    const char* n = std::getenv("SLURM_NTASKS");
    c.ranks = n ? std::max(1, std::atoi(n)) : 1;
  }
  c.end_time = pool::allocation_end_from_env();
  if (c.end_time <= 0 && a.time_limit_min > 0) c.end_time = pool::now_s() + 60.0 * a.time_limit_min;
  c.margin_s = a.margin_s;
  c.idle_s = a.idle_s;
  return pool::run_worker(c, [](const std::string& line) {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
    fmt::print(stderr, "{} dlsweep worker: {}\n", buf, line);
    std::fflush(stderr);
  });
}

}  // namespace dlsweep::sched
