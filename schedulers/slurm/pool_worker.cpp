// pool_worker.cpp — see pool_worker.hpp.
#include "schedulers/slurm/pool_worker.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "common/protocol.hpp"

namespace dlsweep::sched::pool {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_usr2 = 0;
volatile std::sig_atomic_t g_term = 0;

extern "C" void on_usr2(int) { g_usr2 = 1; }
extern "C" void on_term(int) { g_term = 1; }

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

enum class Outcome { recorded, abandoned };

/// Runs one claimed task to its end. `abandoned`: the worker was told to stop (TERM) and the
/// trial's end is deliberately not recorded.
Outcome run_task(const WorkerConfig& c, const PoolDir& pool, const std::string& tag, const TaskFile& task,
                 bool& warned_out, const std::function<void(const std::string&)>& log) {
  const double t0 = now_s();
  pid_t child = ::fork();
  if (child < 0) {
    pool.write_exit(c.id, tag, ExitRecord{127, 0, false, false, false, 0});
    log(fmt::format("{}: fork failed", tag));
    return Outcome::recorded;
  }
  if (child == 0) {
    ::setpgid(0, 0);
    ::signal(SIGUSR2, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::setenv("DLSWEEP_WORKER", c.id.c_str(), 1);
    // The trial's script reads its index line at ${SLURM_ARRAY_TASK_ID:-0}: the worker's own
    // array task id is not the trial's.
    for (const char* v : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MAX",
                          "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP"})
      ::unsetenv(v);
    ::execl("/bin/bash", "bash", task.script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(child, child);
  pool.write_run(c.id, tag, RunRecord{hostname(), static_cast<long>(child), t0});
  log(fmt::format("{} ({}): started, process group {}", tag, task.token, child));
  ExitRecord rec;
  double kill_at = 0, next_cancel_check = 0;
  int status = 0;
  bool abandoning = false;
  for (;;) {
    pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) break;
    const double t = now_s();
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
    sleep_s(0.05);
  }
  ::kill(-child, SIGKILL);  // what the trial left behind in its group
  rec.seconds = now_s() - t0;
  if (WIFEXITED(status))
    rec.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    rec.signal = WTERMSIG(status);
  if (abandoning) {
    log(fmt::format("{}: stopped with the worker; not recorded (the orchestrator queues it again)", tag));
    return Outcome::abandoned;
  }
  warned_out = rec.warned;
  if (auto st = pool.write_exit(c.id, tag, rec); !st) log(fmt::format("{}: {}", tag, st.error().message()));
  log(fmt::format("{}: ended (exit {}, signal {}) after {:.1f} s", tag, rec.exit_code, rec.signal, rec.seconds));
  return Outcome::recorded;
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

int run_worker(const WorkerConfig& c, const std::function<void(const std::string&)>& log) {
  const PoolDir pool(c.pool);
  std::error_code ec;
  fs::create_directories(pool.worker_dir(c.id), ec);
  if (ec) {
    log("cannot create " + pool.worker_dir(c.id).string() + ": " + ec.message());
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_usr2;
  ::sigaction(SIGUSR2, &sa, nullptr);
  sa.sa_handler = on_term;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  log(fmt::format("worker {} on {}: {} task(s){}", c.id, hostname(), c.ranks,
                  c.end_time > 0 ? fmt::format(", allocation ends in {:.0f} s", c.end_time - now_s()) : ""));
  double idle_since = now_s(), next_beat = 0;
  const double started_at = c.start_time > 0 ? c.start_time : idle_since;
  std::size_t ran = 0;
  for (;;) {
    const double t = now_s();
    if (t >= next_beat) {
      write_file_atomic(pool.worker_dir(c.id) / "heartbeat", fmt::format("{:.3f} {}\n", t, ran), Durability::none);
      next_beat = t + 5;
    }
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
      if (!task) continue;  // taken meanwhile, or half-written
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
      bool warned = false;
      auto outcome = run_task(c, pool, tag, *task, warned, log);
      ++ran;
      idle_since = now_s();
      if (outcome == Outcome::abandoned) return 0;
      break;
    }
    if (claimed) continue;
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
    if (t - idle_since > c.idle_s) {
      log(fmt::format("idle for {:.0f} s: exiting after {} trial(s)", c.idle_s, ran));
      return 0;
    }
    sleep_s(c.poll_s);
  }
}

}  // namespace dlsweep::sched::pool
