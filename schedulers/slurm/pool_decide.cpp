// pool_decide.cpp — see pool_decide.hpp.
#include "schedulers/slurm/pool_decide.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "common/protocol.hpp"

namespace dlsweep::sched::pool {

namespace {

using K = JobEventKind;

/// The first task of `tag` still tracked (as the backend's task_by_tag finds it).
TaskView* find(std::vector<TaskView>& tasks, std::vector<bool>& gone, const std::string& tag) {
  for (std::size_t i = 0; i < tasks.size(); ++i)
    if (!gone[i] && tasks[i].tag == tag) return &tasks[i];
  return nullptr;
}

/// "w2 (Slurm job 1234)" once the controller accepted it; "w2" before.
std::string worker_named(const Snapshot& s, const std::string& wid) {
  if (auto n = worker_number(wid))
    for (const auto& w : s.workers)
      if (w.number == *n && !w.native_id.empty()) return wid + " (Slurm job " + w.native_id + ")";
  return wid;
}

}  // namespace

std::optional<int> worker_number(std::string_view wid) {
  int n = 0;
  if (wid.size() < 2 || wid[0] != 'w') return std::nullopt;
  auto r = std::from_chars(wid.data() + 1, wid.data() + wid.size(), n);
  if (r.ec != std::errc() || r.ptr != wid.data() + wid.size()) return std::nullopt;
  return n;
}

std::string worker_id(int n) { return fmt::format("w{}", n); }

std::string run_key(const RunRecord& r) { return fmt::format("{}/{}/{:.6f}", r.host, r.pgid, r.started); }

ScanAction decide_finish(const TaskView& t, const std::string& worker, const ExitRecord& rec, double longest_s) {
  ScanAction a;
  a.tag = t.tag;
  a.worker = worker;
  if (rec.warned && rec.exit_code == protocol::kExitStopped && !t.cancel_requested && !rec.cancelled) {
    // Stopped at its allocation's time-limit warning, with a checkpoint: the next worker
    // resumes it. A cancel asked meanwhile wins: it ends instead.
    a.kind = ScanAction::Kind::requeue;
    a.events.push_back(
        {K::requeued,
         fmt::format("stopped with a checkpoint at worker {}'s time-limit warning: back in the pool's queue", worker)});
    return a;
  }
  a.kind = ScanAction::Kind::retire;
  // Only a clean end says how long a trial takes (workers near their limit take what fits).
  if (!rec.cancelled && !rec.timed_out && rec.exit_code == 0 && rec.signal == 0 && rec.seconds > longest_s)
    a.estimate_s = rec.seconds;
  // Ended before a look saw it run: the engine hears it started first.
  if (!t.started) a.events.push_back({K::started, "running on worker " + worker});
  if (rec.not_started) {
    // The worker could not start the trial's script (not the script's own 127): a failed
    // attempt, with the reason.
    Event ev{K::lost, fmt::format("worker {} could not start the trial's script: {}", worker, rec.error)};
    ev.launch_failed = true;
    a.events.push_back(std::move(ev));
  } else if (rec.cancelled || t.cancel_requested)
    a.events.push_back({K::cancelled, "cancelled"});
  else if (rec.timed_out)
    a.events.push_back({K::cancelled, fmt::format("timed out after {:.0f} s", t.timeout_s)});
  else
    a.events.push_back(
        {K::exited, fmt::format("ended on worker {} after {:.1f} s", worker, rec.seconds), rec.exit_code, rec.signal});
  return a;
}

ScanPlan decide_scan(const Snapshot& s) {
  ScanPlan plan;
  // What the earlier steps did, as the later claims see it (a task claimed twice is finished once).
  std::vector<TaskView> tasks = s.tasks;
  std::vector<bool> gone(tasks.size(), false);
  double longest_s = s.longest_s;
  for (const auto& c : s.claims) {
    const Claim& claim = c.claim;
    TaskView* t = find(tasks, gone, claim.tag);
    if (!t) continue;  // not this orchestrator's (yet): adopt() takes it
    if (claim.has_exit) {
      if (c.exit) {
        ScanAction a = decide_finish(*t, claim.worker, *c.exit, longest_s);
        if (a.kind == ScanAction::Kind::requeue)
          t->started = false;
        else
          gone[std::size_t(t - tasks.data())] = true;
        if (a.estimate_s) longest_s = *a.estimate_s;
        plan.actions.push_back(std::move(a));
        plan.changed = true;
        continue;
      }
      // Damaged, or of another version: said (once), and the claim read on as if it had no
      // end yet: a later look may read it whole.
      plan.actions.push_back({ScanAction::Kind::log, claim.tag, claim.worker, {}, std::nullopt, c.exit_error, {}});
    }
    // A run already reported (its allocation requeued since): the earlier start's record,
    // left until the restarted worker takes the task back; unread, the next look reads it.
    const bool seen_before = !t->seen_run.empty() && (!c.run || run_key(*c.run) == t->seen_run);
    if (claim.has_run && !t->started && !seen_before) {
      t->started = true;
      t->seen_run = c.run ? run_key(*c.run) : std::string();
      plan.actions.push_back({ScanAction::Kind::start,
                              claim.tag,
                              claim.worker,
                              {{K::started, "running on worker " + worker_named(s, claim.worker)}},
                              std::nullopt,
                              {},
                              t->seen_run});
      plan.changed = true;
    }
    if (t->cancel_requested && !claim.has_cancel) {
      // cancel() found it claimed (or it was claimed since): the worker stops it.
      plan.actions.push_back({ScanAction::Kind::request_cancel, claim.tag, claim.worker, {}, std::nullopt, {}, {}});
      plan.changed = true;
    }
  }
  return plan;
}

std::vector<PutBack> decide_reclaim(const Snapshot& s, const std::string& wid, const std::string& why) {
  std::vector<PutBack> out;
  for (const auto& c : s.claims) {
    // An exit record is the trial's end: the look before this one reported it.
    if (c.claim.worker != wid || c.claim.has_exit) continue;
    PutBack p{c.claim.tag, wid, false, std::nullopt, std::nullopt};
    auto t = std::find_if(s.tasks.begin(), s.tasks.end(), [&](const TaskView& v) { return v.tag == c.claim.tag; });
    if (t != s.tasks.end()) {
      p.tracked = true;
      // Back in the queue, a task whose cancel was asked is taken out again: no worker starts it.
      if (t->cancel_requested) p.if_withdrawn = Event{K::cancelled, "cancelled (its worker ended first)"};
      if (t->started)
        p.requeued = Event{
            K::requeued,
            fmt::format("worker {} ended ({}): back in the pool's queue, to resume from its checkpoint", wid, why)};
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Requeued> decide_worker_requeued(const Snapshot& s, const std::string& wid, const std::string& why) {
  std::vector<Requeued> out;
  for (const auto& c : s.claims) {
    // An exit record is the trial's end: a look reports it.
    if (c.claim.worker != wid || c.claim.has_exit) continue;
    auto t = std::find_if(s.tasks.begin(), s.tasks.end(), [&](const TaskView& v) { return v.tag == c.claim.tag; });
    if (t == s.tasks.end()) continue;
    Requeued r{c.claim.tag, {}, std::nullopt};
    if (t->started) {
      r.requeued = Event{K::requeued,
                         fmt::format("the allocation of worker {} was {}: the trial runs again from its checkpoint "
                                     "when the worker restarts",
                                     worker_named(s, wid), why.empty() ? "requeued by Slurm" : why)};
      // Its start's record was unread then: the one there now is taken for it.
      if (t->seen_run.empty() && c.run) r.seen_run = run_key(*c.run);
    } else if (c.claim.has_run && c.run) {
      // Its run began, unseen, and was stopped: not started by its record either.
      r.seen_run = run_key(*c.run);
    } else {
      continue;  // never ran: the restarted worker runs it; nothing to say
    }
    out.push_back(std::move(r));
  }
  return out;
}

WorkerPlan after_failed_start(std::size_t live, Error error) {
  WorkerPlan plan;
  plan.live = live;
  // Those still alive go on (no more are started); with none, nothing can run: every trial
  // still waiting ends with the reason (retrying cannot help until the cause is fixed).
  if (live == 0) {
    Event ev{K::lost, "cannot run a pilot worker: " + error.message()};
    ev.cannot_start = true;
    plan.end_waiting = std::move(ev);
  }
  plan.give_up = std::move(error);
  return plan;
}

WorkerPlan decide_workers(const Snapshot& s) {
  std::size_t live = 0;
  for (const auto& w : s.workers)
    if (!w.ended) ++live;
  const std::size_t want = std::min<std::size_t>(std::size_t(std::max(s.workers_wanted, 0)), s.tasks.size());
  if (live >= want) return WorkerPlan{live, 0, std::nullopt, std::nullopt};
  // Workers that keep dying at once are not replaced for ever: the waiting trials end `lost`,
  // naming the last worker's log.
  if (s.failed_in_a_row >= kMaxFailedWorkers)
    return after_failed_start(
        live, Error{fmt::format("{} workers in a row failed; the last: {}", s.failed_in_a_row, s.last_failure),
                    "backend.workers",
                    "read the worker's log, fix the cause (backend.setup, the dlsweep binary's path on the compute "
                    "nodes), then `dlsweep resume`"});
  return WorkerPlan{live, want - live, std::nullopt, std::nullopt};
}

WorkerEnd decide_worker_end(const JobEvent& ev, const std::string& native_id, const std::string& log) {
  WorkerEnd end;
  const std::string how =
      ev.kind == K::exited ? (ev.signal ? fmt::format("signal {}", ev.signal) : fmt::format("exit {}", ev.exit_code))
                           : std::string(to_string(ev.kind)) + (ev.message.empty() ? "" : ": " + ev.message);
  end.why = fmt::format("Slurm job {}, {}", native_id, how);
  end.failed = ev.kind == K::lost || (ev.kind == K::exited && (ev.exit_code != 0 || ev.signal != 0));
  // A worker that ends cleanly (retired near its time limit, idle) breaks the run of failures
  // (WorkerEnd::failed_in_a_row).
  if (end.failed)
    end.failure = fmt::format("worker w{} (Slurm job {}) ended: {}; its log: {}", ev.trial_id, native_id, how, log);
  return end;
}

ResumeClaim decide_resume_claim(const Claim& c, bool worker_alive) {
  if (!c.has_exit && !worker_alive) return ResumeClaim{true, {}, false};
  return ResumeClaim{false, c.has_exit ? "ENDED" : c.has_run ? "RUNNING" : "PENDING", c.has_exit};
}

std::vector<Event> decide_adopted_end(const ExitRecord& done, double timeout_s) {
  std::vector<Event> out{{K::started, "ran on a worker"}};
  if (done.not_started) {
    Event ev{K::lost, "a worker could not start the trial's script: " + done.error};
    ev.launch_failed = true;
    out.push_back(std::move(ev));
  } else if (done.cancelled)
    out.push_back({K::cancelled, "cancelled"});
  else if (done.timed_out)
    out.push_back({K::cancelled, fmt::format("timed out after {:.0f} s", timeout_s)});
  else
    out.push_back({K::exited, "ended on a worker", done.exit_code, done.signal});
  return out;
}

}  // namespace dlsweep::sched::pool
