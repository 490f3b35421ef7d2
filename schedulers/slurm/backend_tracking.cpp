// backend_tracking.cpp — SlurmBackend after submission: polling the controller for the
// jobs' states, cancelling, and finding a study's jobs again on resume (backend.cpp has
// preflight, batching and submission; the invariants are listed there).
#include "schedulers/slurm/backend.hpp"
#include "schedulers/slurm/backend_internal.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "schedulers/slurm/quote.hpp"
#include "schedulers/slurm/shared_runs_dir.hpp"

namespace dlsweep::sched {

namespace fs = std::filesystem;
using namespace slurm;

// ---------------------------------------------------------------- poll

void SlurmBackend::stop_following() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    // Only jobs the controller holds: one waiting for a batch, or in one being sent, stays
    // (flush and on_submitted look it up).
    if (!tracker_.tracked(it->first) || it->second->in_batch ||
        std::find(waiting_.begin(), waiting_.end(), it->first) != waiting_.end()) {
      ++it;
      continue;
    }
    tracker_.forget(it->first);
    it = jobs_.erase(it);
  }
  if (tracker_.live() == 0) {
    poll_timer_.cancel();
    poll_due_.reset();
  }
}

void SlurmBackend::schedule_poll(double delay_s) {
  if (tracker_.live() == 0) return;
  const auto due = std::chrono::steady_clock::now() + seconds(delay_s);
  if (poll_due_ && *poll_due_ <= due) return;  // an earlier poll is already planned
  poll_due_ = due;
  poll_timer_.expires_at(due);
  poll_timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    poll_due_.reset();
    poll();
  });
}

void SlurmBackend::poll() {
  if (tracker_.live() == 0) return;
  if (poll_in_flight_) {
    schedule_poll(poll_interval_s_);
    return;
  }
  poll_in_flight_ = true;
  stats_.queries++;
  run_on_worker([ids = tracker_.live_job_ids()](Driver& d) { return d.query(ids); },
                [this](DriverResult<std::vector<JobRecord>> r) {
                  if (!r) {
                    poll_in_flight_ = false;
                    stats_.query_failures++;
                    log("polling the controller failed (jobs are kept, retrying): " + r.error().error.message());
                    after_poll(false);
                    return;
                  }
                  auto changes = tracker_.observe(*r);
                  const bool changed = !changes.empty();
                  on_changes(changes);
                  auto missing = tracker_.missing_native_ids();
                  if (missing.empty()) {
                    poll_in_flight_ = false;
                    after_poll(changed);
                    return;
                  }
                  stats_.accounting_queries++;
                  run_on_worker([missing](Driver& d) { return d.accounting(missing); },
                                [this, changed](DriverResult<std::vector<JobRecord>> acct) {
                                  poll_in_flight_ = false;
                                  if (!acct) log("asking accounting failed: " + acct.error().error.message());
                                  auto more = tracker_.observe_accounting(acct ? *acct : std::vector<JobRecord>{},
                                                                          acct.has_value());
                                  on_changes(more);
                                  after_poll(changed || !more.empty());
                                });
                });
}

void SlurmBackend::after_poll(bool changed) {
  poll_interval_s_ = changed ? options_.poll_min_s : std::min(options_.poll_max_s, poll_interval_s_ * 2);
  schedule_poll(poll_interval_s_);
  if (!waiting_.empty()) schedule_flush();
}

void SlurmBackend::on_changes(const std::vector<TaskChange>& changes) {
  bool cancels = false;
  for (const auto& c : changes) {
    auto it = jobs_.find(c.id);
    if (it == jobs_.end()) continue;
    Job& job = *it->second;
    const bool timed_out = c.kind == JobEventKind::cancelled && !job.timed_out.empty();
    emit(job, c.kind, timed_out ? job.timed_out : c.message, c.native_id, c.exit_code, c.signal,
         /*cannot_start=*/false, c.pending_class, c.launch_failed);
    if (c.kind == JobEventKind::started) start_timeout(job);
    if (c.kind == JobEventKind::requeued) job.timeout_timer.reset();
    if (c.cancel && !it->second->cancel_requested) {
      // Held after a failed launch: it would wait for a release forever (slurm/tracker.hpp).
      log(fmt::format("{}: {}; cancelling it", c.native_id, c.message));
      to_cancel_.push_back(c.id);
      cancels = true;
    }
    if (c.kind == JobEventKind::exited || c.kind == JobEventKind::cancelled || c.kind == JobEventKind::lost)
      jobs_.erase(it);
  }
  if (cancels) schedule_cancel_flush();
}

// ---------------------------------------------------------------- timeout

void SlurmBackend::start_timeout(Job& job) {
  if (job.spec.timeout_s <= 0 || !job.timed_out.empty()) return;
  // Each run gets the whole timeout, as Slurm gives a requeued job its whole --time.
  job.timeout_timer = std::make_unique<boost::asio::steady_timer>(io_, seconds(job.spec.timeout_s));
  job.timeout_timer->async_wait(
      [this, id = job.id, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        auto it = jobs_.find(id);
        if (it == jobs_.end() || it->second->cancel_requested) return;
        it->second->timed_out = fmt::format("timed out after {:g} s", it->second->spec.timeout_s);
        cancel(id);
      });
}

// ---------------------------------------------------------------- cancel

void SlurmBackend::cancel(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  if (job.cancel_requested) return;
  job.cancel_requested = true;
  if (!job.in_batch && !tracker_.tracked(job_id)) {  // still waiting in the backend
    std::erase(waiting_, job_id);
    if (waiting_.empty()) cancel_capacity_retry();  // nothing left to wait for room
    emit(job, JobEventKind::cancelled, "cancelled before it was submitted");
    jobs_.erase(it);
    return;
  }
  if (job.in_batch) {
    // A batch not being sent (waiting to retry) whose jobs are all cancelled never goes
    // out: a shutdown does not wait for the controller to come back. One being sent is
    // cancelled as soon as the controller accepts it.
    drop_cancelled_batches();
    return;
  }
  tracker_.cancel_requested(job_id);
  to_cancel_.push_back(job_id);
  schedule_cancel_flush();
}

void SlurmBackend::drop_cancelled_batches() {
  for (auto b = batches_.begin(); b != batches_.end();) {
    const bool all = std::all_of((*b)->ids.begin(), (*b)->ids.end(), [&](const std::string& id) {
      auto it = jobs_.find(id);
      return it == jobs_.end() || it->second->cancel_requested;
    });
    if ((*b)->sending || !all) {
      ++b;
      continue;
    }
    for (const auto& id : (*b)->ids) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) continue;
      emit(*it->second, JobEventKind::cancelled, "cancelled before it was submitted");
      jobs_.erase(it);
    }
    b = batches_.erase(b);
  }
}

void SlurmBackend::schedule_cancel_flush() {
  if (cancel_posted_) return;
  cancel_posted_ = true;
  boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_)] {
    if (alive.expired()) return;
    cancel_posted_ = false;
    flush_cancels();
  });
}

void SlurmBackend::flush_cancels() {
  if (cancel_in_flight_ || to_cancel_.empty()) return;
  std::set<std::string> wanted;
  for (const auto& id : to_cancel_)
    if (tracker_.tracked(id) && !tracker_.done(id)) wanted.insert(id);
  to_cancel_.clear();
  if (wanted.empty()) return;
  // One expression per array: the whole array when every live task of it goes.
  std::vector<std::string> exprs;
  for (const auto& [job, live] : tracker_.live_by_job()) {
    std::vector<std::uint32_t> tasks;
    bool plain = false;
    for (const auto& id : live) {
      if (!wanted.count(id)) continue;
      if (auto t = tracker_.task_of(id)) tasks.push_back(*t);
      else plain = true;
    }
    if (plain) exprs.push_back(std::to_string(job));
    else if (tasks.size() == live.size()) exprs.push_back(std::to_string(job));
    else if (tasks.size() == 1) exprs.push_back(fmt::format("{}_{}", job, tasks[0]));
    else if (!tasks.empty()) exprs.push_back(fmt::format("{}_[{}]", job, format_array_tasks(tasks)));
  }
  cancel_in_flight_ = true;
  stats_.cancel_calls++;
  run_on_worker([exprs](Driver& d) { return d.cancel(exprs); },
                [this, wanted](DriverResult<void> r) {
                  cancel_in_flight_ = false;
                  if (!r) {
                    log("cancelling failed, retrying: " + r.error().error.message());
                    to_cancel_.insert(to_cancel_.end(), wanted.begin(), wanted.end());
                    retry_later(poll_interval_s_, [this] { flush_cancels(); });
                    return;
                  }
                  if (!to_cancel_.empty()) schedule_cancel_flush();
                  poll_interval_s_ = options_.poll_min_s;
                  schedule_poll(options_.poll_min_s);
                });
}

// ---------------------------------------------------------------- find_jobs

Result<std::vector<SlurmFoundJob>> SlurmBackend::find_jobs(const std::string& study) {
  std::promise<DriverResult<std::vector<JobRecord>>> promise;
  auto future = promise.get_future();
  boost::asio::post(worker_, [this, &promise] { promise.set_value(driver_->list_jobs()); });
  auto jobs = future.get();
  if (!jobs) return std::unexpected(jobs.error().error);
  const std::string name = job_name_for(study);
  std::map<fs::path, std::vector<std::string>> index_cache;  // index file -> token per task
  auto token_of = [&](const fs::path& index, std::uint32_t task) -> std::string {
    auto it = index_cache.find(index);
    if (it == index_cache.end()) {
      std::vector<std::string> tokens;
      std::ifstream in(index);
      std::string line;
      std::getline(in, line);  // header
      while (std::getline(in, line)) {
        auto words = split_index_line(line);
        tokens.push_back(words && words->size() > 1 ? (*words)[1] : std::string());
      }
      it = index_cache.emplace(index, std::move(tokens)).first;
    }
    return task < it->second.size() ? it->second[task] : std::string();
  };
  std::vector<SlurmFoundJob> out;
  for (const auto& r : *jobs) {
    if (r.name != name) continue;
    fs::path index;
    if (r.comment.rfind("dlsweep:", 0) == 0) {
      std::string tag = r.comment.substr(8);
      if (tag.find('/') == std::string::npos && !tag.empty()) index = options_.script_dir / (tag + ".index");
    }
    auto add = [&](std::optional<std::uint32_t> task) {
      SlurmFoundJob f;
      f.job_id = r.array_job_id != 0 ? r.array_job_id : r.job_id;
      f.task = task;
      f.native_id = task ? fmt::format("{}_{}", f.job_id, *task) : std::to_string(f.job_id);
      f.state = r.state_name;
      f.comment = r.comment;
      f.index_file = index;
      if (!index.empty()) f.token = token_of(index, task.value_or(0));
      out.push_back(std::move(f));
    };
    if (r.array_job_id != 0 && !r.array_task_id) {
      for (auto t : r.pending_tasks) add(t);
    } else {
      add(r.array_job_id != 0 ? r.array_task_id : std::nullopt);
    }
  }
  return out;
}

Result<std::vector<SurvivingJob>> SlurmBackend::surviving_jobs(const std::string& study) {
  auto found = find_jobs(study);
  if (!found) return std::unexpected(found.error());
  std::vector<SurvivingJob> out;
  out.reserve(found->size());
  for (auto& f : *found) {
    const bool ended = slurm::is_final(slurm::parse_job_state(f.state));
    out.push_back(SurvivingJob{std::move(f.token), std::move(f.native_id), std::move(f.state), ended});
  }
  return out;
}

void SlurmBackend::send_last_cancels() {
  // Cancels asked for whose end was never confirmed (the orchestrator stopped waiting, a
  // hung squeue held the worker): one last scancel, through a fresh driver (this one was
  // interrupted), bounded, so that no job the user cancelled runs on unseen.
  if (!last_cancels_) return;  // a driver given by a test: nothing real to cancel
  std::vector<std::string> natives;
  for (const auto& [id, job] : jobs_)
    if (job->cancel_requested && tracker_.tracked(id) && !tracker_.done(id)) natives.push_back(tracker_.native_id(id));
  if (natives.empty()) return;
  SlurmOptions quick = options_;
  quick.command_timeout_s = std::min(quick.command_timeout_s, 5.0);
  auto driver = make_driver(quick);
  if (!driver) return;
  if (auto r = (*driver)->cancel(natives); !r)
    log(fmt::format("could not cancel {} job(s) on the way out ({}): `dlsweep resume` or `dlsweep cancel` does it",
                    natives.size(), r.error().error.message()));
}

}  // namespace dlsweep::sched
