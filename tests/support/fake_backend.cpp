// fake_backend.cpp — timers standing in for processes. Invariants:
//  - a job is in jobs_ from submit until its terminal event is emitted, and in ready_ only
//    while it waits for a slot; running_ counts started jobs and never exceeds the bound.
//  - each job owns two timers: `step` (queue wait, then metrics lines and the exit) and
//    `deadline` (timeout). Erasing the job destroys them; their handlers look the job up by
//    id and find nothing, so a late timer never acts on a finished job.
#include "tests/support/fake_backend.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fmt/format.h>

#include "common/protocol.hpp"

namespace dlsweep::sched {

struct FakeBackend::Job {
  Job(boost::asio::io_context& io, std::string id_, JobSpec spec_, FakeOutcome outcome_)
      : id(std::move(id_)), spec(std::move(spec_)), outcome(std::move(outcome_)), step(io), deadline(io) {}
  std::string id;
  JobSpec spec;
  FakeOutcome outcome;
  bool started = false;
  std::size_t next_line = 0;
  std::chrono::steady_clock::time_point started_at;
  boost::asio::steady_timer step;
  boost::asio::steady_timer deadline;
};

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.0, s)));
}

bool control_says_stop(const std::filesystem::path& workdir) {
  std::ifstream in(workdir / protocol::kControlFile);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = protocol::parse_control(ss.str());
  return c && c->action == "stop";
}

}  // namespace

FakeBackend::FakeBackend(boost::asio::io_context& io, std::size_t max_concurrent, FakeScript script)
    : io_(io), max_concurrent_(max_concurrent == 0 ? 1 : max_concurrent), script_(std::move(script)) {}

FakeBackend::~FakeBackend() { alive_.reset(); }

void FakeBackend::emit(const Job& job, JobEventKind kind, std::string message, int exit_code, int signal) {
  JobEvent ev = job_event(job.id, job.spec.trial_id, job.spec.attempt, kind, std::move(message), {}, exit_code, signal);
  boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), ev = std::move(ev)] {
    if (alive.expired()) return;
    if (handler_) handler_(ev);
  });
}

Result<std::vector<std::string>> FakeBackend::dry_run(const std::vector<JobSpec>& jobs, const std::filesystem::path& out_dir) {
  std::vector<std::vector<std::string>> argvs;
  for (const auto& spec : jobs) {
    if (spec.argv.empty() || spec.argv[0].empty())
      return fail("empty command line", "fake job " + spec.token(), "give the job a program to run");
    argvs.push_back(spec.argv);
  }
  return write_command_lines(jobs, argvs, out_dir);
}

Result<std::string> FakeBackend::submit(const JobSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return fail("empty command line", "fake job " + spec.token(), "give the job a program to run");
  }
  FakeOutcome outcome = script_ ? script_(spec) : FakeOutcome{};
  auto job = std::make_unique<Job>(io_, fmt::format("fake-{}", ++seq_), spec, std::move(outcome));
  const std::string id = job->id;
  submitted_.push_back(spec);
  emit(*job, JobEventKind::queued, "waiting for a free slot");
  Job& j = *job;
  jobs_.emplace(id, std::move(job));
  if (j.outcome.queue_s <= 0) {
    make_ready(id);
  } else {
    j.step.expires_after(seconds(j.outcome.queue_s));
    j.step.async_wait([this, alive = std::weak_ptr<int>(alive_), id](const boost::system::error_code& ec) {
      if (!ec && !alive.expired()) make_ready(id);
    });
  }
  return id;
}

void FakeBackend::make_ready(const std::string& id) {
  if (!jobs_.count(id)) return;
  ready_.push_back(id);
  pump();
}

void FakeBackend::pump() {
  while (running_ < max_concurrent_ && !ready_.empty()) {
    const std::string id = ready_.front();
    ready_.pop_front();
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    Job& job = *it->second;
    if (job.outcome.lost) {
      end(id, JobEventKind::lost, job.outcome.message.empty() ? "lost before it started" : job.outcome.message, 0,
          0);
      continue;
    }
    start(job);
  }
}

void FakeBackend::start(Job& job) {
  job.started = true;
  job.started_at = std::chrono::steady_clock::now();
  ++running_;
  emit(job, JobEventKind::started, "fake process running");
  if (job.spec.timeout_s > 0) {
    job.deadline.expires_after(seconds(job.spec.timeout_s));
    job.deadline.async_wait(
        [this, alive = std::weak_ptr<int>(alive_), id = job.id](const boost::system::error_code& ec) {
          if (ec || alive.expired()) return;
          auto it = jobs_.find(id);
          if (it == jobs_.end()) return;
          end(id, JobEventKind::cancelled, fmt::format("timed out after {:g} s", it->second->spec.timeout_s),
              128 + 15, 15);
        });
  }
  if (!job.spec.workdir.empty() && !job.outcome.metrics_lines.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(job.spec.workdir, ec);
  }
  tick(job.id);
}

// Schedules the next metrics line (or the exit) at its due time from the start; called
// once at start and then from each step timer.
void FakeBackend::tick(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  const auto& o = job.outcome;
  const std::size_t k = o.metrics_lines.size();
  const auto now = std::chrono::steady_clock::now();
  // Write every line that is due (several at once when run_s is 0), checking control.json
  // after each one like a trial that looks at it between steps.
  while (job.next_line < k) {
    const double due_s = o.run_s * static_cast<double>(job.next_line + 1) / static_cast<double>(k);
    if (job.started_at + seconds(due_s) > now) break;
    if (!job.spec.workdir.empty()) {
      std::ofstream out(job.spec.workdir / protocol::kMetricsFile, std::ios::app);
      out << o.metrics_lines[job.next_line] << '\n';
    }
    ++job.next_line;
    if (!job.spec.workdir.empty() && control_says_stop(job.spec.workdir)) {
      end(id, JobEventKind::exited, "stopped on request (control.json)", protocol::kExitStopped, 0);
      return;
    }
  }
  const double next_s = job.next_line < k ? o.run_s * static_cast<double>(job.next_line + 1) / static_cast<double>(k)
                                          : o.run_s;
  const auto due = job.started_at + seconds(next_s);
  if (job.next_line >= k && due <= now) {
    if (o.signal != 0) {
      end(id, JobEventKind::exited,
          o.message.empty() ? fmt::format("killed by signal {}", o.signal) : o.message, 128 + o.signal, o.signal);
    } else {
      end(id, JobEventKind::exited, o.message.empty() ? fmt::format("exit code {}", o.exit_code) : o.message,
          o.exit_code, 0);
    }
    return;
  }
  job.step.expires_at(due);
  job.step.async_wait([this, alive = std::weak_ptr<int>(alive_), id](const boost::system::error_code& ec) {
    if (!ec && !alive.expired()) tick(id);
  });
}

void FakeBackend::end(const std::string& id, JobEventKind kind, std::string message, int exit_code, int signal) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  std::unique_ptr<Job> job = std::move(it->second);
  jobs_.erase(it);
  std::erase(ready_, id);
  if (job->started) --running_;
  emit(*job, kind, std::move(message), exit_code, signal);
  // Destroying the job cancels its timers; their handlers find no job and do nothing.
  job.reset();
  pump();
}

void FakeBackend::cancel(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  const bool was_running = it->second->started;
  end(job_id, JobEventKind::cancelled, was_running ? "cancelled" : "cancelled before it started",
      was_running ? 128 + 15 : 0, was_running ? 15 : 0);
}

}  // namespace dlsweep::sched
