// pool_backend.cpp — see pool_backend.hpp.
#include "schedulers/slurm/pool_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "common/program_path.hpp"
#include "schedulers/launch.hpp"
#include "schedulers/slurm/parse.hpp"
#include "schedulers/slurm/pool_decide.hpp"
#include "schedulers/slurm/script.hpp"
#include "schedulers/warm_runner.hpp"

namespace dlsweep::sched {

namespace fs = std::filesystem;
using namespace slurm;

namespace {

constexpr std::string_view kNativePrefix = "pool:";
constexpr double kScanS = 0.25;     ///< the pool's files are looked at this soon after a change
constexpr double kScanMaxS = 1.0;   ///< and backed off to this while nothing changes

std::string workers_study(const std::string& study) { return study + ".workers"; }

bool keeps_imported(const JobSpec& spec) { return warm::runs_warm(spec.argv, spec.ranks, spec.launcher); }

}  // namespace

bool pool_worker_alive(std::string_view slurm_state) { return !is_final(parse_job_state(slurm_state)); }

double next_pool_scan_s(double previous_s, bool changed) {
  if (changed || previous_s <= 0) return kScanS;
  return std::min(kScanMaxS, previous_s * 2);
}

Result<std::unique_ptr<SlurmPoolBackend>> SlurmPoolBackend::create(boost::asio::io_context& io, SlurmOptions options,
                                                                   fs::path worker_exe,
                                                                   std::unique_ptr<slurm::Driver> driver) {
  if (options.workers < 1)
    return fail("workers must be at least 1", "backend.workers", "give the number of pilot allocations, or remove the key");
  if (worker_exe.empty()) {
    auto self = self_executable();
    if (!self) return fail("cannot find the dlsweep executable (/proc/self/exe)", "backend.workers", "");
    worker_exe = *self;
  }
  SlurmOptions inner = options;
  inner.max_concurrent = std::size_t(options.workers);
  inner.submit_window = std::size_t(options.workers);
  inner.requeue = false;  // a worker that ends is replaced, not requeued
  auto tmpl = load_template(options);
  if (!tmpl) return std::unexpected(tmpl.error());
  auto b = driver ? SlurmBackend::create(io, inner, std::move(driver)) : SlurmBackend::create(io, inner);
  if (!b) return std::unexpected(b.error());
  auto self = std::unique_ptr<SlurmPoolBackend>(
      new SlurmPoolBackend(io, std::move(options), std::move(*tmpl), std::move(*b), std::move(worker_exe)));
  if (self->options_.create_script_dir) {
    if (auto st = self->pool_.create(); !st) return std::unexpected(st.error());
    std::error_code ec;
    fs::remove(self->pool_.stop_file(), ec);  // work again
    if (auto st = write_file_atomic(self->pool_.root() / "worker.sh", self->worker_wrapper()); !st)
      return std::unexpected(st.error());
    for (const auto& wid : self->pool_.worker_ids())
      if (auto n = pool::worker_number(wid)) self->worker_seq_ = std::max(self->worker_seq_, *n);
    self->longest_s_ = self->pool_.estimate_s();
  }
  return self;
}

SlurmPoolBackend::SlurmPoolBackend(boost::asio::io_context& io, SlurmOptions options, std::string template_text,
                                   std::unique_ptr<SlurmBackend> inner, fs::path worker_exe)
    : io_(io),
      options_(std::move(options)),
      template_text_(std::move(template_text)),
      inner_(std::move(inner)),
      worker_exe_(std::move(worker_exe)),
      pool_(fs::absolute(options_.script_dir) / "pool"),
      scan_timer_(io) {
  inner_->set_event_handler([this](const JobEvent& ev) { on_worker_event(ev); });
}

SlurmPoolBackend::~SlurmPoolBackend() {
  scan_timer_.cancel();
  // Nothing left to run: idle workers exit now rather than at their idle time. With work
  // left (a signal, a crash) they keep running it, for `resume` to follow.
  if (tasks_.empty() && options_.create_script_dir) write_file_atomic(pool_.stop_file(), "stop\n", Durability::none);
}

std::string SlurmPoolBackend::worker_wrapper() const {
  // Runs `dlsweep worker` under the allocation's batch script (which passes USR2 and TERM on
  // to it). However the worker ends — kill -9 included — the trial it was running is stopped
  // before the allocation ends (its process group is in <tag>.run), so that the orchestrator
  // can give the trial to another worker without it ever running twice.
  return R"SH(#!/bin/bash
# dlsweep pilot worker wrapper (written by dlsweep; arguments: WORKER_DIR PROGRAM ARGS...)
wdir=$1
shift
"$@" &
pid=$!
trap 'kill -s USR2 "$pid" 2>/dev/null' USR2
trap 'kill -s TERM "$pid" 2>/dev/null' TERM
while :; do
  wait "$pid"
  rc=$?
  kill -0 "$pid" 2>/dev/null || break
done
for run in "$wdir"/t*/run; do
  [[ -e $run && ! -e ${run%/run}/exit ]] || continue
  pgid=$(sed -n 's/.*"pgid":\([0-9][0-9]*\).*/\1/p' "$run")
  if [[ -n $pgid ]]; then
    task=${run%/run}
    echo "dlsweep worker wrapper: the worker ended (status $rc) with ${task##*/} running: stopping process group $pgid" >&2
    kill -KILL -- "-$pgid" 2>/dev/null
  fi
done
exit "$rc"
)SH";
}

void SlurmPoolBackend::log_once(const std::string& tag, const std::string& msg) {
  if (!logged_.insert(tag + "\n" + msg).second) return;
  std::fprintf(stderr, "dlsweep slurm pool: %s: %s\n", tag.c_str(), msg.c_str());
}

void SlurmPoolBackend::deliver(JobEvent ev) {
  // Posted, never delivered from inside submit()/cancel()/adopt() (backend.hpp): in order, as
  // the io_context runs posted handlers first in, first out.
  const bool terminal =
      ev.kind == JobEventKind::exited || ev.kind == JobEventKind::cancelled || ev.kind == JobEventKind::lost;
  boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), ev = std::move(ev)] {
    if (alive.expired() || !handler_) return;
    handler_(ev);
  });
  if (terminal) settle_no_more_work();
}

void SlurmPoolBackend::no_more_work() {
  no_more_work_ = true;
  settle_no_more_work();
}

void SlurmPoolBackend::settle_no_more_work() {
  // Kept until the pool's own last task has ended (a stray adopted on resume, a cancel the
  // worker has not confirmed): then `stop`, and nothing of the pool holds the event loop.
  if (!no_more_work_ || !tasks_.empty() || !options_.create_script_dir) return;
  if (!stop_written_) {
    if (auto st = write_file_atomic(pool_.stop_file(), "stop\n", Durability::none); st)
      stop_written_ = true;
    else
      log_once("stop", st.error().message() + " (idle workers exit at their idle time instead)");
  }
  scan_timer_.cancel();
  scan_armed_ = false;
  // A replacement worker not yet accepted by the controller (waiting out a site limit, say)
  // is not submitted any more: it would only start, see `stop` and exit.
  for (const auto& [n, w] : workers_)
    if (!w.ended && w.native_id.empty()) inner_->cancel(w.inner_id);
  inner_->stop_following();
}

void SlurmPoolBackend::emit(const Task& t, JobEventKind kind, std::string message, int exit_code, int signal) {
  deliver(job_event(t.id, t.trial_id, t.attempt, kind, std::move(message), std::string(kNativePrefix) + t.tag, exit_code,
                    signal));
}

void SlurmPoolBackend::emit(const Task& t, const pool::Event& e) {
  JobEvent ev = job_event(t.id, t.trial_id, t.attempt, e.kind, e.message, std::string(kNativePrefix) + t.tag,
                          e.exit_code, e.signal);
  ev.launch_failed = e.launch_failed;
  ev.cannot_start = e.cannot_start;
  deliver(std::move(ev));
}

pool::Snapshot SlurmPoolBackend::snapshot() const {
  pool::Snapshot s;
  for (const auto& [id, t] : tasks_)
    s.tasks.push_back({t.tag, t.started, t.cancel_requested, t.timeout_s, t.seen_run});
  for (const auto& [n, w] : workers_) s.workers.push_back({n, w.native_id, w.ended});
  s.longest_s = longest_s_;
  s.workers_wanted = options_.workers;
  s.failed_in_a_row = failed_in_a_row_;
  s.last_failure = last_failure_;
  return s;
}

Result<fs::path> SlurmPoolBackend::write_trial_script(const JobSpec& spec, const std::string& tag,
                                                     const fs::path& dir) const {
  SlurmOptions o = options_;
  o.requeue = false;  // the pool puts a trial stopped at the warning back in its queue
  BatchRequest req = single_job_request(spec, tag, dir);
  auto prepared = prepare_batch(template_text_, o, req);
  if (!prepared) return std::unexpected(prepared.error());
  if (auto st = write_file_atomic(req.index_path(), prepared->index_text); !st) return std::unexpected(st.error());
  if (auto st = write_file_atomic(req.script_path(), prepared->request.script); !st) return std::unexpected(st.error());
  return req.script_path();
}

JobSpec SlurmPoolBackend::worker_spec(const std::string& study, int n, int ranks) const {
  const std::string wid = "w" + std::to_string(n);
  JobSpec w;
  w.study = workers_study(study);
  w.trial_id = n;
  w.attempt = 0;
  w.workdir = pool_.worker_dir(wid);
  w.ranks = ranks;
  w.launcher = std::string(kLauncherAllocationOnly);
  w.warn_always = true;
  // The allocation's length (the study's `time`) tells the worker which trials still fit.
  w.argv = {"/bin/bash",
            (pool_.root() / "worker.sh").string(),
            w.workdir.string(),
            worker_exe_.string(),
            "worker",
            "--pool",
            pool_.root().string(),
            "--id",
            wid,
            "--ranks",
            std::to_string(ranks),
            "--time-limit-min",
            std::to_string(options_.time_limit),
            "--margin-s",
            std::to_string(std::max(options_.signal_lead_s, 10)),
            "--idle-s",
            fmt::format("{}", options_.worker_idle_s)};
  return w;
}

Status SlurmPoolBackend::write_task(const JobSpec& spec, const std::string& tag) {
  auto script = write_trial_script(spec, tag, pool_.scripts_dir());
  if (!script) return std::unexpected(script.error());
  pool::TaskFile task{spec.token(), *script, spec.ranks, spec.timeout_s, 0};
  if (options_.keep_imported && keeps_imported(spec)) {
    task.warm = true;
    task.argv = spec.argv;
    task.env = spec.env;
    task.trial_dir = spec.workdir;
  }
  return pool_.enqueue(tag, task);
}

Result<std::string> SlurmPoolBackend::submit(const JobSpec& given) {
  JobSpec spec = given;
  std::error_code ec;
  spec.workdir = fs::absolute(spec.workdir, ec);
  if (auto st = SlurmBackend::check_job(spec); !st) return std::unexpected(st.error());
  fs::create_directories(spec.workdir, ec);
  // Named after the trial's number when the engine gives it ("pool:trial-0003-a0" in what
  // users read, beside the trial's directory trial-0003/), not the database's id.
  const std::string tag = pool::task_tag(spec.trial_id, spec.number, spec.attempt);
  if (auto st = write_task(spec, tag); !st) return std::unexpected(st.error());
  Task t = track(spec, tag);
  tasks_[t.id] = t;
  no_more_work_ = false;
  if (stop_written_) {
    fs::remove(pool_.stop_file(), ec);
    stop_written_ = false;
  }
  boost::asio::post(io_, [this, id = t.id, alive = std::weak_ptr<int>(alive_)] {
    if (alive.expired()) return;
    if (auto it = tasks_.find(id); it != tasks_.end())
      emit(it->second, JobEventKind::queued, "in the pool's queue, for the next free worker");
    ensure_workers();
    scan_interval_s_ = kScanS;
    schedule_scan(kScanS);
  });
  return t.id;
}

SlurmPoolBackend::Task SlurmPoolBackend::track(const JobSpec& spec, const std::string& tag) {
  Task t;
  t.id = fmt::format("pool-{}.{}", ::getpid(), ++seq_);
  t.tag = tag;
  t.token = spec.token();
  t.study = spec.study;
  t.trial_id = spec.trial_id;
  t.attempt = spec.attempt;
  t.timeout_s = spec.timeout_s;
  study_ = spec.study;
  max_ranks_ = std::max(max_ranks_, spec.ranks);
  return t;
}

SlurmPoolBackend::Task* SlurmPoolBackend::task_by_tag(const std::string& tag) {
  for (auto& [id, t] : tasks_)
    if (t.tag == tag) return &t;
  return nullptr;
}

void SlurmPoolBackend::cancel(const std::string& job_id) {
  auto it = tasks_.find(job_id);
  if (it == tasks_.end()) return;
  Task& t = it->second;
  t.cancel_requested = true;
  if (pool_.withdraw(t.tag)) {
    Task gone = t;
    tasks_.erase(it);
    emit(gone, JobEventKind::cancelled, "cancelled before a worker took it");
    return;
  }
  for (const auto& claim : pool_.claims_of(t.tag)) pool_.request_cancel(claim.worker, claim.tag);
  schedule_scan(0);
}

void SlurmPoolBackend::schedule_scan(double delay_s) {
  const auto due = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(delay_s));
  if (scan_armed_ && scan_due_ <= due) return;  // an earlier scan is planned
  if (scan_armed_) scan_timer_.cancel();        // its handler sees operation_aborted
  scan_armed_ = true;
  scan_due_ = due;
  scan_timer_.expires_at(due);
  scan_timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    scan_armed_ = false;
    scan();
  });
}

void SlurmPoolBackend::scan() {
  // Workers whose allocation ended were reclaimed then (their tasks put back): nothing of
  // theirs is left to read.
  std::set<std::string> ended;
  for (auto& [n, w] : workers_) {
    if (!w.ended) continue;
    if (!w.reclaimed) w.reclaimed = reclaim(pool::worker_id(n), w.why, /*look_first=*/false);
    if (w.reclaimed) ended.insert(pool::worker_id(n));
  }
  pool::Snapshot s = snapshot();
  for (auto& claim : pool_.claims(ended)) {
    pool::ClaimView c{std::move(claim), std::nullopt, {}, std::nullopt};
    // The exit records of this orchestrator's tasks only: the others are adopt()'s.
    const Task* t = task_by_tag(c.claim.tag);
    if (c.claim.has_exit && t) {
      auto rec = pool::PoolDir::read_exit(pool_.in_worker(c.claim.worker, c.claim.tag, ".exit"));
      if (rec)
        c.exit = std::move(*rec);
      else
        c.exit_error = rec.error().message();
    }
    // Which run a start would report (a requeued worker's earlier run is not started again).
    if (c.claim.has_run && t && !t->started) c.run = read_run(c.claim);
    s.claims.push_back(std::move(c));
  }
  const pool::ScanPlan plan = pool::decide_scan(s);
  for (const auto& a : plan.actions) apply(a);
  ensure_workers();
  // Polling that backs off while nothing happens (long trials: one look a second), and is
  // quick again after a change, a submit, a cancel or a worker's end.
  scan_interval_s_ = next_pool_scan_s(scan_interval_s_, plan.changed);
  if (!tasks_.empty()) schedule_scan(scan_interval_s_);
}

void SlurmPoolBackend::apply(const pool::ScanAction& a) {
  using Kind = pool::ScanAction::Kind;
  switch (a.kind) {
    case Kind::log:
      log_once(a.tag, a.message);
      return;
    case Kind::request_cancel:
      pool_.request_cancel(a.worker, a.tag);
      return;
    default:
      break;
  }
  Task* t = task_by_tag(a.tag);
  if (!t) return;  // decide_scan steps only on tracked tasks
  if (a.kind == Kind::start) {
    t->started = true;
    t->seen_run = a.run;
    failed_in_a_row_ = 0;  // a worker that runs a trial breaks a run of failed workers
  } else if (a.kind == Kind::requeue) {
    pool_.unclaim(a.tag, a.worker);
    t->started = false;
  } else {
    if (a.estimate_s) {
      longest_s_ = *a.estimate_s;
      pool_.set_estimate_s(longest_s_);
    }
    if (auto st = pool_.retire(a.tag, a.worker); !st) log_once(a.tag, st.error().message());
    // Untracked before its terminal event is delivered (which settles a pending no_more_work()).
    Task done = *t;
    tasks_.erase(done.id);
    for (const auto& ev : a.events) emit(done, ev);
    return;
  }
  for (const auto& ev : a.events) emit(*t, ev);
}

bool SlurmPoolBackend::reclaim(const std::string& wid, const std::string& why, bool look_first) {
  if (look_first) scan();  // what the worker finished is recorded first
  pool::Snapshot s = snapshot();
  for (auto& claim : pool_.claims()) s.claims.push_back({std::move(claim), std::nullopt, {}, std::nullopt});
  bool all_back = true;
  for (const auto& back : pool::decide_reclaim(s, wid, why)) {
    if (!pool_.unclaim(back.tag, back.worker)) {
      // Still in the worker's directory: the scan keeps reading it, and this is tried again.
      log_once(back.tag, fmt::format("cannot put the task of worker {} back in the queue ({}); trying again", wid,
                                     std::strerror(errno)));
      all_back = false;
      continue;
    }
    Task* t = task_by_tag(back.tag);
    if (!t) continue;
    if (back.if_withdrawn && pool_.withdraw(back.tag)) {
      Task gone = *t;
      tasks_.erase(gone.id);
      emit(gone, *back.if_withdrawn);
      continue;
    }
    if (back.requeued) {
      t->started = false;
      emit(*t, *back.requeued);
    }
  }
  return all_back;
}

void SlurmPoolBackend::on_worker_event(const JobEvent& ev) {
  const int n = static_cast<int>(ev.trial_id);
  Worker& w = workers_[n];
  if (!ev.native_id.empty()) w.native_id = ev.native_id;
  switch (ev.kind) {
    case JobEventKind::started:
      w.running = true;
      break;
    case JobEventKind::requeued:
      // Slurm put the allocation back in its queue (an admin's requeue, a preemption or node
      // failure with requeue): the worker's processes are gone and its job lives on (PENDING,
      // then RUNNING again as the same worker). Not ended: no replacement, no task put back.
      w.running = false;
      worker_requeued(pool::worker_id(n), ev.message);
      break;
    case JobEventKind::exited:
    case JobEventKind::cancelled:
    case JobEventKind::lost: {
      w.running = false;
      const std::string wid = pool::worker_id(n);
      const pool::WorkerEnd end =
          pool::decide_worker_end(ev, w.native_id, (pool_.worker_dir(wid) / "stderr.log").string());
      // Reclaimed while still counted live: its last look (reclaim's scan) reads its files
      // (a run not yet seen is started, then requeued), and no replacement is started twice.
      w.why = end.why;
      w.reclaimed = reclaim(wid, w.why);
      w.ended = true;
      failed_in_a_row_ = end.failed_in_a_row(failed_in_a_row_);
      if (end.failed) last_failure_ = end.failure;
      ensure_workers();
      scan_interval_s_ = kScanS;
      if (!tasks_.empty()) schedule_scan(kScanS);
      break;
    }
    default:
      break;
  }
}

std::optional<pool::RunRecord> SlurmPoolBackend::read_run(const pool::Claim& c) const {
  auto run = pool::PoolDir::read_run(pool_.in_worker(c.worker, c.tag, ".run"));
  if (!run) return std::nullopt;
  return std::move(*run);
}

void SlurmPoolBackend::worker_requeued(const std::string& wid, const std::string& why) {
  scan();  // what the worker finished, or began, before it stopped is recorded first
  pool::Snapshot s = snapshot();
  for (auto& claim : pool_.claims()) {
    pool::ClaimView c{std::move(claim), std::nullopt, {}, std::nullopt};
    if (c.claim.worker == wid && c.claim.has_run && !c.claim.has_exit && task_by_tag(c.claim.tag))
      c.run = read_run(c.claim);
    s.claims.push_back(std::move(c));
  }
  for (const auto& step : pool::decide_worker_requeued(s, wid, why)) {
    Task* t = task_by_tag(step.tag);
    if (!t) continue;
    if (!step.seen_run.empty()) t->seen_run = step.seen_run;
    if (step.requeued) {
      t->started = false;
      emit(*t, *step.requeued);
    }
  }
  scan_interval_s_ = kScanS;
  if (!tasks_.empty()) schedule_scan(kScanS);
}

void SlurmPoolBackend::ensure_workers() {
  pool::WorkerPlan plan = pool::decide_workers(snapshot());
  for (std::size_t i = 0, live = plan.live; i < plan.start; ++i, ++live)
    if (auto st = submit_worker(); !st) {
      plan = pool::after_failed_start(live, st.error());
      break;
    }
  if (!plan.end_waiting) return;
  std::vector<Task> waiting;
  for (auto& [id, t] : tasks_)
    if (pool_.withdraw(t.tag)) waiting.push_back(t);
  for (auto& t : waiting) {
    tasks_.erase(t.id);
    emit(t, *plan.end_waiting);
  }
}

Status SlurmPoolBackend::submit_worker() {
  const int n = ++worker_seq_;
  const std::string wid = "w" + std::to_string(n);
  const fs::path wdir = pool_.worker_dir(wid);
  std::error_code ec;
  fs::create_directories(wdir, ec);
  if (ec) return fail("cannot create " + wdir.string() + ": " + ec.message(), "backend.workers", "check runs_dir");
  auto id = inner_->submit(worker_spec(study_, n, max_ranks_));
  if (!id) return std::unexpected(id.error());
  workers_[n] = Worker{*id, "", max_ranks_, false, false, false, ""};
  ++workers_started_;
  return {};
}

Status SlurmPoolBackend::preflight(const JobSpec& sample) { return inner_->preflight(sample); }

Result<std::vector<std::string>> SlurmPoolBackend::dry_run(const std::vector<JobSpec>& jobs, const fs::path& out_dir) {
  // What goes to Slurm: the worker allocations (one array per shape, as submit sends them),
  // and the trial scripts the workers would run — each built by the function submit uses.
  std::vector<std::string> lines;
  int ranks = 1;
  for (const auto& j : jobs) ranks = std::max(ranks, j.ranks);
  std::vector<JobSpec> workers;
  for (int i = 1; i <= std::min<int>(options_.workers, int(jobs.size())); ++i)
    workers.push_back(worker_spec(jobs.front().study, i, ranks));
  auto inner = inner_->dry_run(workers, out_dir);
  if (!inner) return std::unexpected(inner.error());
  lines.push_back(fmt::format("pilot workers: {} allocation(s) of {} task(s) each run the study's {} trial(s) one "
                              "after another (backend.workers: {})",
                              workers.size(), ranks, jobs.size(), options_.workers));
  for (auto& l : *inner) lines.push_back(std::move(l));
  for (const auto& given : jobs) {
    JobSpec j = given;
    j.workdir = fs::absolute(j.workdir);
    const std::string tag = pool::task_tag(j.trial_id, j.number, j.attempt);
    auto script = write_trial_script(j, tag.starts_with("trial-") ? tag : "trial-" + tag, out_dir);
    if (!script) return std::unexpected(script.error());
    lines.push_back(fmt::format("{}: trial {} as a worker runs it", script->string(),
                                j.number >= 0 ? std::to_string(j.number) : j.token()));
  }
  return lines;
}

Result<std::vector<SurvivingJob>> SlurmPoolBackend::surviving_jobs(const std::string& study) {
  study_ = study;
  // The workers first: those still on the controller are followed again.
  auto found = inner_->find_jobs(workers_study(study));
  if (!found) return std::unexpected(found.error());
  std::set<std::string> live;
  for (const auto& f : *found) {
    const std::string prefix = workers_study(study) + "/";
    if (f.token.rfind(prefix, 0) != 0) continue;
    int n = 0;
    auto rest = f.token.substr(prefix.size());
    auto r = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (r.ec != std::errc()) continue;
    // Alive: anything not final (COMPLETING, REQUEUED, STOPPED, ... may still run the
    // worker's processes): its tasks stay with it. The one parser Slurm tracking uses.
    if (!pool_worker_alive(f.state)) continue;
    const JobState state = parse_job_state(f.state);
    JobSpec spec;
    spec.study = workers_study(study);
    spec.trial_id = n;
    auto id = inner_->adopt(spec, f.native_id);
    if (!id) continue;
    workers_[n] = Worker{*id, f.native_id, 1, state == JobState::running, false, false, ""};
    worker_seq_ = std::max(worker_seq_, n);
    live.insert("w" + std::to_string(n));
  }
  std::vector<SurvivingJob> out;
  for (const auto& claim : pool_.claims()) {
    const std::string& tag = claim.tag;
    const pool::ResumeClaim seen = pool::decide_resume_claim(claim, live.count(claim.worker) > 0);
    if (seen.put_back) {
      // Its worker is gone (and its allocation with it): the trial waits for another.
      if (!pool_.unclaim(tag, claim.worker))
        log_once(tag, fmt::format("cannot put the task of worker {} back in the queue ({})", claim.worker,
                                  std::strerror(errno)));
      continue;
    }
    auto task = pool::PoolDir::read_task(pool_.in_worker(claim.worker, tag, ".task"));
    if (!task) continue;
    out.push_back(SurvivingJob{task->token, std::string(kNativePrefix) + tag, seen.state, seen.ended});
  }
  for (const auto& tag : pool_.queued_tags()) {
    auto task = pool::PoolDir::read_task(pool_.queued(tag));
    if (task) out.push_back(SurvivingJob{task->token, std::string(kNativePrefix) + tag, "PENDING", false});
  }
  return out;
}

Result<std::string> SlurmPoolBackend::adopt(const JobSpec& spec, const std::string& native_id) {
  if (native_id.rfind(kNativePrefix, 0) != 0)
    return fail("not a pilot worker's task: " + native_id, "adopting " + spec.token(),
                "requeue the trial instead (the study ran with per-trial jobs before)");
  const std::string tag = native_id.substr(kNativePrefix.size());
  Task t = track(spec, tag);
  const bool in_pool = std::filesystem::exists(pool_.queued(tag)) || !pool_.claims_of(tag).empty();
  auto done = in_pool ? std::nullopt : pool_.done_exit(tag);
  if (!in_pool && !done) return fail("the task is not in the pool any more", "adopting " + native_id, "");
  tasks_[t.id] = t;
  boost::asio::post(io_, [this, id = t.id, done, alive = std::weak_ptr<int>(alive_)] {
    if (alive.expired()) return;
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return;
    emit(it->second, JobEventKind::queued, "found in the pool on resume");
    if (done) {
      Task d = it->second;
      tasks_.erase(it);
      for (const auto& ev : pool::decide_adopted_end(*done, d.timeout_s)) emit(d, ev);
      return;
    }
    ensure_workers();
    schedule_scan(0);
  });
  return t.id;
}

Status SlurmPoolBackend::cancel_detached(const std::vector<std::string>& native_ids) {
  std::vector<std::string> slurm_ids;
  for (const auto& id : native_ids) {
    if (id.rfind(kNativePrefix, 0) != 0) {
      slurm_ids.push_back(id);
      continue;
    }
    const std::string tag = id.substr(kNativePrefix.size());
    if (pool_.withdraw(tag)) continue;
    for (const auto& claim : pool_.claims_of(tag)) pool_.request_cancel(claim.worker, tag);
  }
  if (!slurm_ids.empty()) return inner_->cancel_detached(slurm_ids);
  return {};
}

}  // namespace dlsweep::sched
