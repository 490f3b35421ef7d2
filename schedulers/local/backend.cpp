// backend.cpp — queueing, launching, reaping and killing local jobs. See the header
// for the contract. Invariants kept here:
//  - a job is in exactly one of queue_ (waiting) or running_ (has a live, unreaped pid);
//    it leaves both exactly when its terminal event is emitted.
//  - running_.size() <= max_concurrent_ at all times; pump() is the only place that moves
//    jobs from queue_ to running_.
//  - events are posted, never called inline, so a handler may call back into the backend
//    and event order equals emit order.
#include "schedulers/local/backend.hpp"

#include "schedulers/local/orphans.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "schedulers/launch.hpp"
#include "schedulers/process_spawn.hpp"
#include "schedulers/warm_runner.hpp"

namespace dlsweep::sched {

struct LocalBackend::Job {
  Job(boost::asio::io_context& io, std::string id_, JobSpec spec_)
      : id(std::move(id_)), spec(std::move(spec_)), timeout_timer(io), kill_timer(io) {}
  std::string id;
  JobSpec spec;
  pid_t pid = -1;
  int master_port = 0;       ///< MASTER_PORT given to a torch.distributed job (0: none)
  bool terminating = false;  ///< cancel or timeout asked it to stop
  std::string reason;        ///< message of the `cancelled` event
  boost::asio::steady_timer timeout_timer;
  boost::asio::steady_timer kill_timer;
  std::optional<WarmRunner> warm;  ///< handed to a kept-imported runner (pid is the runner's)
  std::unique_ptr<boost::asio::steady_timer> poll_timer;  ///< reads the runner's done.json
  std::chrono::steady_clock::time_point handed_over;      ///< when the runner got it
};

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

LocalBackend::LocalBackend(boost::asio::io_context& io, std::size_t max_concurrent, LocalOptions options)
    : io_(io), max_concurrent_(max_concurrent == 0 ? 1 : max_concurrent), options_(std::move(options)),
      sigchld_(io, SIGCHLD) {
  if (options_.keep_imported) warm_ = std::make_unique<WarmPool>(max_concurrent_);
}

LocalBackend::~LocalBackend() {
  alive_.reset();  // pending handlers become no-ops
  queue_.clear();
  for (auto& [id, job] : running_) {
    kill(-job->pid, SIGKILL);
    int status = 0;
    while (waitpid(job->pid, &status, 0) < 0 && errno == EINTR) {
    }
    kill(-job->pid, SIGKILL);  // stragglers that outlived the leader
  }
  running_.clear();
  warm_.reset();  // idle runners: stopped and reaped
  boost::system::error_code ec;
  sigchld_.cancel(ec);
}

Result<std::vector<std::string>> LocalBackend::launch_argv(const JobSpec& job) const {
  return local_launch_argv(job.argv, job.ranks, job.launcher, options_.mpirun, geteuid() == 0);
}

Status LocalBackend::check_job(const JobSpec& job) {
  const std::string where = "local job " + job.token();
  if (job.argv.empty() || job.argv[0].empty()) return fail("empty command line", where, "give the job a program to run");
  if (job.workdir.empty()) return fail("no working directory", where, "set the job's workdir (the trial directory)");
  return {};
}

Result<std::vector<std::string>> LocalBackend::dry_run(const std::vector<JobSpec>& jobs, const std::filesystem::path& out_dir) {
  std::vector<std::vector<std::string>> argvs;
  for (const auto& job : jobs) {
    if (auto st = check_job(job); !st) return std::unexpected(st.error());
    auto argv = launch_argv(job);
    if (!argv) return std::unexpected(argv.error());
    argvs.push_back(std::move(*argv));
  }
  return write_command_lines(jobs, argvs, out_dir);
}

JobEvent LocalBackend::event_for(const Job& job, JobEventKind kind, std::string message) const {
  return job_event(job.id, job.spec.trial_id, job.spec.attempt, kind, std::move(message));
}

void LocalBackend::emit(JobEvent ev) {
  boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), ev = std::move(ev)] {
    if (alive.expired()) return;
    if (handler_) handler_(ev);
  });
}

Result<std::string> LocalBackend::submit(const JobSpec& job) {
  if (auto st = check_job(job); !st) return std::unexpected(st.error());
  const std::string where = "local job " + job.token();
  std::error_code ec;
  std::filesystem::create_directories(job.workdir, ec);
  if (ec) {
    return fail(fmt::format("cannot create working directory '{}': {}", job.workdir.string(), ec.message()),
                where, "check the permissions of the study directory");
  }
  auto j = std::make_unique<Job>(io_, fmt::format("local-{}.{}", getpid(), ++seq_), job);
  std::string id = j->id;
  emit(event_for(*j, JobEventKind::queued, "waiting for a free slot"));
  queue_.push_back(std::move(j));
  pump();
  return id;
}

void LocalBackend::pump() {
  while (running_.size() < max_concurrent_ && !queue_.empty()) {
    auto job = std::move(queue_.front());
    queue_.pop_front();
    launch(std::move(job));
  }
}

void LocalBackend::launch(std::unique_ptr<Job> job) {
  if (!job->spec.launcher.empty()) {
    // torch.distributed's rendezvous: this machine, a port no other job of ours was given
    // and nothing listens on (the trial's own env wins).
    std::vector<int> taken;
    for (const auto& [id, j] : running_) taken.push_back(j->master_port);
    job->master_port = pick_free_port(taken);
    job->spec.env.try_emplace("MASTER_ADDR", "127.0.0.1");
    if (job->master_port > 0) job->spec.env.try_emplace("MASTER_PORT", std::to_string(job->master_port));
  }
  if (local_runs_mpirun(job->spec.ranks, job->spec.launcher) && ompi_pml_)
    job->spec.env.try_emplace("OMPI_MCA_pml", kLocalOmpiPml);  // one machine: shared memory (local/mpi_env.hpp)
  if (warm_ && warm::runs_warm(job->spec.argv, job->spec.ranks, job->spec.launcher) && launch_warm(job)) return;
  auto argv = launch_argv(job->spec);
  if (!argv) {
    auto ev = event_for(*job, JobEventKind::lost, argv.error().message());
    ev.cannot_start = true;
    emit(ev);
    return;
  }
  auto pid = spawn_process(*argv, job->spec.workdir, job->spec.env);
  if (!pid) {
    auto ev = event_for(*job, JobEventKind::lost, pid.error().message());
    ev.cannot_start = true;
    emit(ev);
    return;
  }
  job->pid = *pid;
  emit(event_for(*job, JobEventKind::started, fmt::format("pid {}", job->pid)));
  arm_timeout(*job);
  running_.emplace(job->id, std::move(job));
  arm_sigchld();
}

bool LocalBackend::launch_warm(std::unique_ptr<Job>& job) {
  bool fresh = false;
  auto runner = warm_->take(job->spec.argv, job->spec.workdir, job->spec.env, fresh);
  if (!runner) {
    auto ev = event_for(*job, JobEventKind::lost, runner.error().message());
    ev.cannot_start = true;
    emit(ev);
    return true;
  }
  if (auto st = warm_->hand_over(*runner, job->spec.workdir, job->spec.env); !st) {
    // The runner is sound but the hand-over could not be written: stop it with the job.
    ::kill(-runner->pid, SIGKILL);
    int status = 0;
    while (waitpid(runner->pid, &status, 0) < 0 && errno == EINTR) {
    }
    warm_->forget(*runner);
    auto ev = event_for(*job, JobEventKind::lost, st.error().message());
    ev.cannot_start = true;
    emit(ev);
    return true;
  }
  job->pid = runner->pid;
  job->warm = std::move(*runner);
  emit(event_for(*job, JobEventKind::started,
                 fmt::format("pid {} (kept-imported runner{}, trial {} of it)", job->pid, fresh ? ", started" : "",
                             job->warm->seq)));
  arm_timeout(*job);
  const std::string id = job->id;
  job->poll_timer = std::make_unique<boost::asio::steady_timer>(io_);
  job->handed_over = std::chrono::steady_clock::now();
  running_.emplace(id, std::move(job));
  arm_sigchld();
  arm_warm_poll(id);
  return true;
}

void LocalBackend::arm_warm_poll(const std::string& id) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  Job& job = *it->second;
  // A trial of a few milliseconds costs what noticing its end costs: look often at first,
  // then every warm_poll_s (a late look costs a long trial nothing it would notice).
  const double age = std::chrono::duration<double>(std::chrono::steady_clock::now() - job.handed_over).count();
  job.poll_timer->expires_after(seconds(std::min(options_.warm_poll_s, age < 0.2 ? 0.001 : age < 2 ? 0.005 : 1e9)));
  job.poll_timer->async_wait([this, alive = std::weak_ptr<int>(alive_), id](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    auto it = running_.find(id);
    if (it == running_.end()) return;
    Job& job = *it->second;
    // Once cancel or timeout stopped the runner, its end (SIGCHLD) ends the job.
    if (!job.terminating)
      if (auto code = warm_->finished(*job.warm)) {
        finish_warm(id, *code);
        return;
      }
    arm_warm_poll(id);
  });
}

void LocalBackend::finish_warm(const std::string& id, int exit_code) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  std::unique_ptr<Job> job = std::move(it->second);
  running_.erase(it);
  job->timeout_timer.cancel();
  job->kill_timer.cancel();
  job->poll_timer->cancel();
  auto ev = event_for(*job, JobEventKind::exited,
                      fmt::format("exit code {} (kept-imported runner, pid {})", exit_code, job->pid));
  ev.exit_code = exit_code;
  warm_->give_back(std::move(*job->warm));
  emit(std::move(ev));
  pump();
  // The runners left are idle and their end is not awaited: a SIGCHLD wait with nothing
  // running would keep io_context::run() from returning.
  if (running_.empty() && sigchld_armed_) {
    boost::system::error_code ec;
    sigchld_.cancel(ec);
  }
}

void LocalBackend::arm_timeout(Job& job) {
  if (job.spec.timeout_s <= 0) return;
  job.timeout_timer.expires_after(seconds(job.spec.timeout_s));
  job.timeout_timer.async_wait([this, alive = std::weak_ptr<int>(alive_), id = job.id](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    auto it = running_.find(id);
    if (it == running_.end()) return;
    terminate(*it->second, fmt::format("timed out after {:g} s", it->second->spec.timeout_s));
  });
}

void LocalBackend::arm_sigchld() {
  if (sigchld_armed_ || running_.empty()) return;
  sigchld_armed_ = true;
  sigchld_.async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec, int) {
    if (alive.expired()) return;
    sigchld_armed_ = false;
    // operation_aborted: finish_warm() cancelled the wait (no process of ours runs).
    if (!ec) on_sigchld();
    arm_sigchld();
  });
}

void LocalBackend::on_sigchld() {
  // SIGCHLDs coalesce: one signal may stand for several exits, so poll every job we own.
  std::vector<std::pair<std::string, int>> done;
  for (auto& [id, job] : running_) {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(job->pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == job->pid) {
      done.emplace_back(id, status);
    } else if (r < 0 && errno == ECHILD) {
      done.emplace_back(id, -1);  // someone else reaped it (a stray waitpid(-1) elsewhere)
    }
  }
  for (auto& [id, status] : done) finish(id, status);
  if (warm_) warm_->reap_idle();
}

void LocalBackend::finish(const std::string& id, int status) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  std::unique_ptr<Job> job = std::move(it->second);
  running_.erase(it);
  kill(-job->pid, SIGKILL);  // leave nothing of the job's process group behind
  job->timeout_timer.cancel();
  job->kill_timer.cancel();
  if (job->warm) {
    // The runner ended with the job (cancel, timeout, or the trial ended its process).
    job->poll_timer->cancel();
    warm_->forget(*job->warm);
  }

  JobEvent ev;
  if (status == -1) {
    ev = event_for(*job, JobEventKind::lost,
                   fmt::format("pid {} was reaped outside the backend; its exit status is unknown", job->pid));
  } else {
    std::string how;
    int code = 0, sig = 0;
    if (WIFSIGNALED(status)) {
      sig = WTERMSIG(status);
      code = 128 + sig;  // the shell convention, so a signalled job never looks like success
      how = fmt::format("killed by signal {} ({})", sig, strsignal(sig));
    } else {
      code = WEXITSTATUS(status);
      how = fmt::format("exit code {}", code);
    }
    ev = job->terminating ? event_for(*job, JobEventKind::cancelled, job->reason + "; " + how)
                          : event_for(*job, JobEventKind::exited, how);
    ev.exit_code = code;
    ev.signal = sig;
  }
  emit(std::move(ev));
  pump();
}

void LocalBackend::terminate(Job& job, std::string reason) {
  if (job.terminating) return;  // the first reason (cancel or timeout) stands
  job.terminating = true;
  job.reason = std::move(reason);
  kill(-job.pid, SIGTERM);
  job.kill_timer.expires_after(seconds(options_.cancel_grace_s));
  job.kill_timer.async_wait(
      [this, alive = std::weak_ptr<int>(alive_), id = job.id](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        auto it = running_.find(id);
        if (it != running_.end()) kill(-it->second->pid, SIGKILL);
      });
}

void LocalBackend::cancel(const std::string& job_id) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if ((*it)->id == job_id) {
      emit(event_for(**it, JobEventKind::cancelled, "cancelled before it started"));
      queue_.erase(it);
      return;
    }
  }
  if (auto it = running_.find(job_id); it != running_.end()) terminate(*it->second, "cancelled");
}

std::optional<pid_t> LocalBackend::pid_of(const std::string& job_id) const {
  if (auto it = running_.find(job_id); it != running_.end()) return it->second->pid;
  return std::nullopt;
}

std::size_t LocalBackend::stop_orphans(const std::vector<std::filesystem::path>& trial_dirs, double grace_s) {
  // A scan can miss a process forked during it, or one inside execve (its environment reads
  // empty until the new image is mapped): scan again after each stop, a bounded number of times.
  std::size_t stopped = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<pid_t> pids;
    for (const auto& d : trial_dirs)
      for (pid_t p : find_trial_processes(d)) pids.push_back(p);
    if (pids.empty()) break;
    stopped += stop_processes(pids, grace_s);
  }
  return stopped;
}

}  // namespace dlsweep::sched
