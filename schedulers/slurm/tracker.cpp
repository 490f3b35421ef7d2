// tracker.cpp — the rules of slurm/tracker.hpp.
#include "schedulers/slurm/tracker.hpp"

#include <signal.h>

#include <fmt/format.h>

#include "schedulers/slurm/reason.hpp"

namespace dlsweep::sched::slurm {

namespace {

std::string how(const ExitInfo& e) {
  return e.signal != 0 ? fmt::format("killed by signal {}", e.signal) : fmt::format("exit code {}", e.exit_code);
}

}  // namespace

void Tracker::add(const std::string& id, std::uint32_t job_id, std::optional<std::uint32_t> task) {
  Task t;
  t.id = id;
  t.job_id = job_id;
  t.task = task;
  by_key_[{job_id, task ? static_cast<std::int64_t>(*task) : -1}] = id;
  tasks_[id] = std::move(t);
}

void Tracker::cancel_requested(const std::string& id) {
  if (auto it = tasks_.find(id); it != tasks_.end()) it->second.cancel_requested = true;
}

bool Tracker::done(const std::string& id) const {
  auto it = tasks_.find(id);
  return it != tasks_.end() && it->second.done;
}

bool Tracker::started(const std::string& id) const {
  auto it = tasks_.find(id);
  return it != tasks_.end() && it->second.started;
}

std::string Tracker::native_id(const std::string& id) const {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? std::string() : native(it->second);
}

std::optional<std::uint32_t> Tracker::task_of(const std::string& id) const {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? std::nullopt : it->second.task;
}

std::string Tracker::native(const Task& t) {
  return t.task ? fmt::format("{}_{}", t.job_id, *t.task) : std::to_string(t.job_id);
}

std::vector<std::uint32_t> Tracker::live_job_ids() const {
  std::set<std::uint32_t> ids;
  for (const auto& [id, t] : tasks_)
    if (!t.done) ids.insert(t.job_id);
  return {ids.begin(), ids.end()};
}

std::size_t Tracker::live() const {
  std::size_t n = 0;
  for (const auto& [id, t] : tasks_) n += t.done ? 0 : 1;
  return n;
}

std::map<std::uint32_t, std::vector<std::string>> Tracker::live_by_job() const {
  std::map<std::uint32_t, std::vector<std::string>> out;
  for (const auto& [id, t] : tasks_)
    if (!t.done) out[t.job_id].push_back(id);
  return out;
}

TaskChange Tracker::change(const Task& t, JobEventKind kind, std::string message) const {
  TaskChange c;
  c.id = t.id;
  c.native_id = native(t);
  c.kind = kind;
  c.message = std::move(message);
  return c;
}

TaskChange Tracker::terminal_change(const JobRecord& rec, bool cancel_requested) {
  TaskChange c;
  ExitInfo e = decode_wait_status(rec.wait_status);
  switch (rec.state) {
    case JobState::completed:
    case JobState::failed:
      if (rec.state == JobState::failed && rec.reason == "JobLaunchFailure") {
        c.kind = JobEventKind::lost;
        c.message = "Slurm could not launch the batch script (FAILED, JobLaunchFailure); see the slurm-*.out file";
        break;
      }
      c.kind = JobEventKind::exited;
      c.exit_code = e.exit_code;
      c.signal = e.signal;
      c.message = how(e);
      break;
    case JobState::cancelled:
      c.kind = JobEventKind::cancelled;
      c.exit_code = e.exit_code;
      c.signal = e.signal;
      c.message = cancel_requested ? "cancelled" : "cancelled outside dlsweep (scancel or an administrator)";
      break;
    case JobState::timeout:
      c.kind = JobEventKind::cancelled;
      c.message = "hit the time limit (TIMEOUT)";
      break;
    case JobState::deadline:
      c.kind = JobEventKind::cancelled;
      c.message = "hit its deadline (DEADLINE)";
      break;
    case JobState::out_of_memory:
      c.kind = JobEventKind::exited;
      c.signal = e.signal != 0 ? e.signal : SIGKILL;
      c.exit_code = 128 + c.signal;
      c.message = "out of memory (OUT_OF_MEMORY)";
      break;
    case JobState::node_fail:
      c.kind = JobEventKind::lost;
      c.message = "its node failed (NODE_FAIL)";
      break;
    case JobState::preempted:
      c.kind = JobEventKind::lost;
      c.message = "preempted (PREEMPTED) and not requeued";
      break;
    case JobState::boot_fail:
      c.kind = JobEventKind::lost;
      c.message = "its node failed to boot (BOOT_FAIL)";
      break;
    default:
      c.kind = JobEventKind::lost;
      c.message = fmt::format("ended in state {}", rec.state_name);
      break;
  }
  return c;
}

void Tracker::apply(Task& t, const JobRecord& rec, std::vector<TaskChange>& out) {
  t.seen = true;
  t.missing = 0;
  if (rec.array_task_id && rec.job_id != 0) t.own_id = rec.job_id;
  const bool restarted = rec.restart_count > t.restarts;
  switch (rec.state) {
    case JobState::pending:
    case JobState::requeued:
    case JobState::held:
      if (!t.launch_failure.empty() || note_failed_launch(t, rec, out)) {
        t.restarts = std::max(t.restarts, rec.restart_count);  // not a requeue: it failed
        return;
      }
      if (t.started || restarted) {
        out.push_back(change(t, JobEventKind::requeued,
                             fmt::format("requeued by Slurm (restart {}{})", rec.restart_count,
                                         rec.state == JobState::held ? ", held: " + rec.reason : std::string())));
        t.started = false;
      }
      t.restarts = std::max(t.restarts, rec.restart_count);
      if (std::string why = shown_reason(rec); why != t.reason) {
        t.reason = why;
        TaskChange c = change(t, JobEventKind::pending, why);
        c.pending_class = classify_reason(rec);
        out.push_back(std::move(c));
      }
      return;
    case JobState::running:
    case JobState::suspended:
    case JobState::completing:
      if (restarted && t.started) {
        out.push_back(change(t, JobEventKind::requeued, fmt::format("requeued by Slurm (restart {})", rec.restart_count)));
        t.started = false;
      }
      t.restarts = std::max(t.restarts, rec.restart_count);
      t.reason.clear();
      // COMPLETING starts nothing: right after a requeue it is the earlier run winding down
      // (then PENDING, then the new run's RUNNING), and a run first seen completing is
      // reported started by its final record. (Reporting it started here made one requeue
      // look like two under load: started, requeued, started, requeued, started.)
      if (!t.started && rec.state != JobState::completing) {
        out.push_back(change(t, JobEventKind::started, fmt::format("running as Slurm job {}", native(t))));
        t.started = true;
      }
      return;
    case JobState::unknown:
      return;
    default:
      break;
  }
  // Final.
  if (restarted && t.started) {
    out.push_back(change(t, JobEventKind::requeued, fmt::format("requeued by Slurm (restart {})", rec.restart_count)));
    t.started = false;
  }
  if (!t.launch_failure.empty() && !t.cancel_requested && rec.state == JobState::cancelled) {
    out.push_back(failed_launch_end(t));
    return;
  }
  TaskChange end = terminal_change(rec, t.cancel_requested);
  const bool never_ran = rec.state == JobState::cancelled && !t.started && !restarted;
  if (!t.started && !never_ran && end.kind != JobEventKind::lost) {
    out.push_back(change(t, JobEventKind::started, fmt::format("ran as Slurm job {}", native(t))));
    t.started = true;
  }
  end.id = t.id;
  end.native_id = native(t);
  out.push_back(std::move(end));
  t.done = true;
}

bool Tracker::note_failed_launch(Task& t, const JobRecord& rec, std::vector<TaskChange>& out) {
  if (!held_after_failed_launch(rec)) return false;
  t.launch_failure = shown_reason(rec);
  t.reason = t.launch_failure;
  TaskChange c = change(t, JobEventKind::pending, t.launch_failure);
  c.pending_class = PendingClass::notable;
  c.cancel = !t.cancel_requested;  // else our cancel is on its way already
  out.push_back(std::move(c));
  return true;
}

TaskChange Tracker::failed_launch_end(Task& t) const {
  TaskChange c = change(t, JobEventKind::lost, failed_launch_message(t.launch_failure));
  c.launch_failed = true;
  t.done = true;
  return c;
}

void Tracker::forget(const std::string& id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  by_key_.erase({it->second.job_id, it->second.task ? static_cast<std::int64_t>(*it->second.task) : -1});
  tasks_.erase(it);
}

std::vector<TaskChange> Tracker::observe(const std::vector<JobRecord>& records) {
  std::vector<TaskChange> out;
  for (auto& [id, t] : tasks_) t.seen = false;
  auto task_for = [&](std::uint32_t job, std::int64_t task) -> Task* {
    auto k = by_key_.find({job, task});
    if (k == by_key_.end()) return nullptr;
    auto t = tasks_.find(k->second);
    if (t == tasks_.end()) return nullptr;
    return t->second.done ? nullptr : &t->second;
  };
  for (const auto& rec : records) {
    if (rec.array_job_id != 0 && !rec.array_task_id) {
      for (std::uint32_t task : rec.pending_tasks)
        if (Task* t = task_for(rec.array_job_id, task)) apply(*t, rec, out);
      continue;
    }
    Task* t = rec.array_job_id != 0 ? task_for(rec.array_job_id, *rec.array_task_id) : task_for(rec.job_id, -1);
    if (t) apply(*t, rec, out);
  }
  return out;
}

std::vector<std::string> Tracker::missing_native_ids() const {
  std::vector<std::string> ids;
  for (const auto& [id, t] : tasks_) {
    if (t.done || t.seen) continue;
    ids.push_back(native(t));
    if (t.task && t.own_id != 0) ids.push_back(std::to_string(t.own_id));
  }
  return ids;
}

std::vector<TaskChange> Tracker::observe_accounting(const std::vector<JobRecord>& records, bool ok) {
  std::vector<TaskChange> out;
  for (auto& [id, t] : tasks_) {
    if (t.done || t.seen) continue;
    const JobRecord* found = nullptr;
    for (const auto& r : records) {
      bool match = t.task ? ((r.array_job_id == t.job_id && r.array_task_id == t.task) ||
                             (t.own_id != 0 && r.array_job_id == 0 && r.job_id == t.own_id))
                          : (r.array_job_id == 0 && r.job_id == t.job_id);
      if (match) found = &r;  // the last line wins: sacct lists a requeued job's runs in order
    }
    if (found && is_final(found->state)) {
      apply(t, *found, out);
      continue;
    }
    if (found) {
      t.missing = 0;  // accounting still sees it running: squeue will again
      continue;
    }
    if (!t.launch_failure.empty() && !t.cancel_requested) {
      out.push_back(failed_launch_end(t));  // our scancel of the held task landed
      continue;
    }
    if (t.cancel_requested && !t.started) {
      // Slurm drops an array task cancelled while pending from its tables altogether.
      out.push_back(change(t, JobEventKind::cancelled, "cancelled before it started"));
      t.done = true;
      continue;
    }
    if (++t.missing >= vanish_polls_) {
      out.push_back(change(t, JobEventKind::lost,
                           fmt::format("vanished from the controller: not in squeue nor in accounting for {} polls{}",
                                       t.missing, ok ? "" : " (accounting could not be asked)")));
      t.done = true;
    }
  }
  return out;
}

}  // namespace dlsweep::sched::slurm
