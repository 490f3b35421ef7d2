// engine.cpp — the engine's lifecycle: run, signals, fill/launch, interrupt, ticks, done.
// Job events, transitions, ingestion and pruning are in engine_events.cpp.
#include "engine/engine.hpp"
#include "schedulers/backend_kinds.hpp"

#include <csignal>

#include "common/stop_signal.hpp"

#include <fmt/format.h>

#include "common/objective.hpp"
#include "common/protocol.hpp"
#include "engine/trial_objectives.hpp"
#include "engine/job_builder.hpp"
#include "engine/state_machine.hpp"
#include "engine/trial_files.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;
using sched::JobEvent;
using sched::JobEventKind;


Engine::Engine(boost::asio::io_context& io, db::Storage& storage, sched::Backend& backend, const StudySpec& spec,
               SearchParts parts, std::int64_t study_id, EngineOptions options, Progress& progress)
    : io_(io),
      storage_(storage),
      backend_(backend),
      spec_(spec),
      study_id_(study_id),
      options_(std::move(options)),
      progress_(progress),
      sampler_(std::move(parts.sampler)),
      pruner_(std::move(parts.pruner)),
      total_(parts.budget),
      clock_(options_.clock ? options_.clock : std::make_shared<AsioEngineClock>(io)),
      signals_(io),
      shutdown_timer_(io),
      watch_(io, [this](const std::set<std::int64_t>& ids) {
        if (done_) return;
        for (auto id : ids)
          if (Live* live = live_.find(id)) {
            serve_suggests(*live);
            ingest(*live);
          }
      }, options_.watch_files),
      start_(clock_->now()) {
  history_.maximize = maximizes(spec.objective.mode);
  counts_.metric = spec_.objective.metric;
  axis_ = CurveAxis{spec_.objective.metric, maximizes(spec_.objective.mode), spec_.objective.target};
  set_directions(history_, spec_);
  for (auto& rec : parts.warm) history_.trials.push_back(std::move(rec));  // warm start: never run, no trial id
}

search::TrialRecord* Engine::history_of(std::int64_t trial_id) {
  auto h = history_index_.find(trial_id);
  return h == history_index_.end() ? nullptr : &history_.trials[h->second];
}

Engine::~Engine() { flush(); }

db::Storage& Engine::db() {
  if (!storage_.in_batch()) {
    if (auto st = storage_.begin_batch(); !st) fatal(st.error());  // the write goes on in a transaction of its own
    // Two hops: the commit comes after the handlers this turn posts (fill() after a trial
    // ends), so that their writes join the batch too.
    else boost::asio::post(io_, [this] { boost::asio::post(io_, [this] { flush(); }); });
  }
  return storage_;
}

void Engine::flush() {
  if (auto st = storage_.commit_batch(); !st) fatal(st.error());
}

double Engine::elapsed_s() const {
  return std::chrono::duration<double>(clock_->now() - start_).count();
}

SweepSnapshot Engine::snapshot() const {
  SweepSnapshot s = counts_;
  s.total = total_;
  s.created = next_number_;
  s.elapsed_s = elapsed_s();
  s.done_before = done_at_start_;
  s.stopping = interrupted_ || !failed_fast_.empty();
  live_.for_each([&](const Live& live) {
    s.blocked += live.row.state == TrialState::queued && live.pending_class == sched::PendingClass::notable;
  });
  return s;
}

void Engine::fatal(const Error& e) {
  if (fatal_) return;
  fatal_ = e;
  progress_.event("error: " + e.message() + " — stopping the sweep", snapshot());
  interrupt("fatal error");
}

Result<SweepOutcome> Engine::run() {
  start_ = clock_->now();
  done_at_start_ = counts_.done();
  backend_.set_event_handler([this](const JobEvent& ev) { on_backend_event(ev); });
  if (options_.handle_signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    // The orchestrator's own job (--as-job) gets Slurm's time-limit warning: it detaches
    // like on SIGTERM, and its batch script requeues it (exit 75 after USR2).
    if (options_.detach_on_sigterm) signals_.add(SIGUSR2);
    watch_stop_signals();  // after signals_: SQLite's busy wait sees the signal too
    wait_for_signal();
  }
  progress_.event(fmt::format("study {}: {}, {} at a time on backend {}", spec_.name,
                              total_ < 0 ? std::string("? trials")
                              : sampler_ && sampler_->name() == "branch"  // its waves follow the losses
                                  ? "up to " + trials_word(total_)
                                  : trials_word(total_),
                              backend_.max_concurrent(), backend_.name()),
                  snapshot());
  if (auto st = load_enqueued(); !st) fatal(st.error());
  boost::asio::post(io_, [this] { fill(); tick(); check_done(); });
  io_.run();
  io_.restart();
  flush();

  SweepOutcome out{interrupted_, detached_, snapshot(), {}, failed_fast_, stop_fix_};
  for (const auto& why : failure_order_) {
    int n = 0;
    for (const auto& [number, reason] : last_failure_) n += reason == why;
    if (n > 0) out.failure_reasons.emplace_back(why, n);
  }
  // A detached study is still RUNNING: its trials are.
  std::string state = detached_ ? "RUNNING" : (fatal_ || interrupted_ || !failed_fast_.empty()) ? "STOPPED" : "FINISHED";
  std::string reason = fatal_       ? "stopped on an error: " + fatal_->message()
                       : !failed_fast_.empty() ? (stop_fix_.empty() ? "failed fast: " : "stopped: ") + failed_fast_
                       : detached_  ? std::string("orchestrator detached (SIGTERM); `dlsweep resume` follows the trials")
                       : interrupted_ ? std::string("interrupted")
                                      : std::string("all trials done");
  if (auto st = storage_.set_study_state(study_id_, state, reason); !st)
    if (!fatal_) fatal_ = st.error();
  if (!enqueued_.empty() && !fatal_)
    progress_.event(
        interrupted_ || detached_
            ? fmt::format("{} enqueued {} not started yet; `dlsweep resume {}` runs them first", enqueued_.size(), enqueued_.size() == 1 ? "trial" : "trials",
                          spec_.name)
            : fmt::format("{} enqueued {} wait: the study's budget of {} is used up; "
                          "`dlsweep resume {} --add-trials {}` runs them",
                          enqueued_.size(), enqueued_.size() == 1 ? "trial" : "trials", trials_word(total_), spec_.name,
                          enqueued_.size()),
        snapshot());
  progress_.finish(out.snapshot, fmt::format("study {} {}", spec_.name,
                                             fatal_      ? "stopped on an error"
                                             : !failed_fast_.empty() ? (stop_fix_.empty()
                                                                            ? "stopped: its trials fail the same way"
                                                                            : "stopped: " + failed_fast_)
                                             : detached_ ? "detached: its trials run on"
                                             : interrupted_ ? "interrupted"
                                                            : "finished"));
  if (fatal_) return std::unexpected(*fatal_);
  return out;
}

void Engine::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;  // cancelled: the sweep is over
    on_signal(sig);
    if (!done_) wait_for_signal();
  });
}

void Engine::on_signal(int sig) {
  if (done_) return;
  if ((sig == SIGTERM || sig == SIGUSR2) && options_.detach_on_sigterm && backend_.jobs_outlive_orchestrator()) {
    detach(sig == SIGUSR2 ? "USR2 (the job's time-limit warning)" : "SIGTERM");
    return;
  }
  if (sig == SIGUSR2) {  // nothing to detach from: carry on to the time limit
    progress_.event("USR2 (time-limit warning): the trials are this orchestrator's own; carrying on", snapshot());
    return;
  }
  const bool again = interrupted_;
  interrupt(sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)");
  if (!again) arm_shutdown_wait();
  // A second signal: the user will not wait for the jobs' ends to be confirmed.
  if (again && !done_) stop_waiting(fmt::format("{} again", sig == SIGINT ? "Ctrl-C" : "SIGTERM"));
}

void Engine::detach(const std::string& why) {
  if (done_) return;
  // Trials the backend still holds back (a site limit refused them) have no job: they stay
  // WAITING in the database and resume submits them; only the others run on.
  std::size_t held = 0;
  live_.for_each([&](Live& live) {
    ingest(live);
    if (live.row.state == TrialState::waiting) ++held;
  });
  const std::size_t running = live_.size() - held;
  const std::string where(sched::backend_display_name(backend_.name()));
  const auto s = [](std::size_t n) { return n == 1 ? "" : "s"; };
  const auto verb_s = [](std::size_t n) { return n == 1 ? "s" : ""; };
  std::string what;
  if (held == 0)
    what = fmt::format("{} live trial{} keep{} running on {} — `dlsweep resume {}` follows them", running, s(running),
                       verb_s(running), where, spec_.name);
  else if (running == 0)
    what = fmt::format("no trial has a job on {}: {} not yet submitted (held back for a limit) stay{} WAITING — "
                       "`dlsweep resume {}` submits them", where, held, verb_s(held), spec_.name);
  else
    what = fmt::format("{} live trial{} keep{} running on {}; {} not yet submitted (held back for a limit) stay{} "
                       "WAITING — `dlsweep resume {}` follows the first and submits the rest",
                       running, s(running), verb_s(running), where, held, verb_s(held), spec_.name);
  progress_.event(why + ": detaching; " + what, snapshot());
  detached_ = true;
  end_loop(/*stop_io=*/true);
}

void Engine::end_loop(bool stop_io) {
  done_ = true;
  clock_->cancel();
  shutdown_timer_.cancel();
  watch_.close();
  boost::system::error_code ec;
  signals_.cancel(ec);
  signals_.clear(ec);
  if (stop_io) io_.stop();  // the backend's timers and calls in flight would keep the loop alive
}

void Engine::interrupt(const std::string& why) {
  if (done_) return;
  bool first = !interrupted_;
  interrupted_ = true;
  if (first) interrupt_why_ = why;
  if (first) progress_.event(fmt::format("{}: cancelling {}", why, live_.size() == 1 ? std::string("1 live trial") : fmt::format("{} live trials", live_.size())), snapshot());
  // Trials that never launched are cancelled on the spot.
  while (!waiting_.empty()) {
    auto row = waiting_.front();
    waiting_.pop_front();
    apply(row, TrialEvent::cancel, why);
  }
  live_.for_each([&](Live& live) {
    if (live.stop_reason.empty()) live.stop_reason = "cancelled";
    cancel_job(live.job_id);
  });
  check_done();
}

void Engine::arm_shutdown_wait() {
  if (done_ || !backend_.jobs_outlive_orchestrator()) return;
  shutdown_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::max(0.0, options_.shutdown_wait_s))));
  shutdown_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) stop_waiting(fmt::format("{:g} s", options_.shutdown_wait_s));
  });
}

void Engine::stop_waiting(const std::string& why) {
  if (done_) return;
  // Every live trial was asked to stop (interrupt()): it is CANCELLED now, whether or not
  // the scheduler has confirmed its job's end; `resume` cancels any job of it still there.
  std::size_t n = 0;
  live_.for_each([&](Live& live) {
    ingest(live, /*may_prune=*/false);
    if (apply(live.row, TrialEvent::cancel,
              fmt::format("cancelled: {}; its job was asked to stop, its end not confirmed before the orchestrator exited",
                          interrupt_why_)))
      ++n;
  });
  flush();
  if (n > 0)
    progress_.event(fmt::format("stopped waiting ({}): {} trial{} recorded CANCELLED before {} confirmed the end of "
                                "{} job{}; `dlsweep resume {}` cancels any that is left",
                                why, n, n == 1 ? "" : "s", backend_.name(), n == 1 ? "its" : "their",
                                n == 1 ? "" : "s", spec_.name),
                    snapshot());
  end_loop(/*stop_io=*/true);
}

void Engine::fill() {
  if (interrupted_ || done_) return;
  // The backend bounds concurrency itself; its submit window says how many jobs it wants
  // handed over at once (local: as many as run at once; Slurm: whole arrays).
  while (backend_.active() < backend_.submit_window() && !interrupted_) {
    if (!waiting_.empty()) {
      auto row = waiting_.front();
      waiting_.pop_front();
      live_.add(row.id).row = row;
      launch(row.id);
      continue;
    }
    if (exhausted_) break;
    if (total_ >= 0 && next_number_ >= total_) { exhausted_ = true; break; }
    if (!enqueued_.empty()) {
      if (auto st = create_enqueued(); !st) { fatal(st.error()); return; }
      continue;
    }
    if (!pbt_ready()) break;  // pbt: the previous generation is still running
    note_search_choice(next_number_);
    auto params = sampler_->next(next_number_, history_);
    if (!params) { exhausted_ = true; break; }
    if (auto st = pbt_prepare(next_number_, *params); !st) { fatal(st.error()); return; }
    if (auto st = create_next(next_number_, *params); !st) { fatal(st.error()); return; }
  }
}

Status Engine::create_next(std::int64_t number, const search::Params& params, std::optional<std::int64_t> enqueued_id) {
  fs::path dir = trial_dir_for(options_.runs_dir, spec_.name, number);
  // Write-ahead: params.json and the WAITING row exist before any job does.
  if (auto st = prepare_trial_dir(dir, params_file(params)); !st) return st;
  auto id = enqueued_id ? db().create_enqueued_trial(*enqueued_id, study_id_, number, params, dir.string())
                        : db().create_trial(study_id_, number, params, dir.string());
  if (!id) return std::unexpected(id.error());
  pbt_record(*id, number);
  ++next_number_;
  counts_.waiting++;
  history_index_[*id] = history_.trials.size();
  history_.trials.push_back(search::TrialRecord{number, params, search::TrialStatus::running, std::nullopt, {}, {}, {}});
  Live& live = live_.add(*id);
  live.row = db::TrialRow{*id, study_id_, number, TrialState::waiting, 0, dir.string(), params, std::nullopt, ""};
  launch(*id);
  return {};
}

void Engine::launch(std::int64_t trial_id) {
  Live& live = live_.at(trial_id);
  fs::path dir = live.row.trial_dir;
  clear_control(dir);
  clear_program_outcome(dir);  // the program's word is for the attempt that writes it
  live.stop_reason.clear();
  live.deterministic_failure = false;
  live.tail = std::make_unique<JsonlTail>(metrics_file(dir));
  watch_.add(trial_id, dir);
  // A new launch asks again and is answered afresh (the database keeps its stored values): no
  // answer or request of an earlier launch, or of a replaced study's trial in this directory,
  // may be taken for this one's.
  std::error_code ec;
  fs::remove(dir / protocol::kSuggestedFile, ec);
  fs::remove(dir / protocol::kSuggestFile, ec);
  live.suggest_offset = 0;
  live.suggested = nlohmann::json::object();
  live.curve = {};
  live.objective_checked = false;
  live.prune_note.clear();
  if (auto* rec = history_of(trial_id)) {  // a new attempt starts a new curve
    rec->status = search::TrialStatus::running;
    rec->curve.clear();
  }

  sched::JobSpec job = build_job(spec_, options_.train_binary, trial_id, live.row.number, live.row.attempt, dir,
                                 live.row.params);
  pbt_env(live.row.number, job);

  // Write-ahead: the trial's row and params (and everything before) are committed before
  // its job can exist.
  flush();
  if (fatal_) {
    abandon_launch(live, std::unexpected(*fatal_));
    return;
  }
  auto id = submit_job(job);
  // A requeued trial (QUEUED after its job died with a previous orchestrator) gets a new
  // job for the same attempt. A WAITING one stays WAITING until the backend accepts its
  // job (its `queued` event, note_accepted): a job a site limit holds back is not queued.
  if (!id && live.row.state == TrialState::waiting && !apply(live.row, TrialEvent::launch, "submit failed")) {
    abandon_launch(live, id);
    return;
  }
  if (!id) {
    // The backend refused the job itself (a bad value, an unwritable directory): the same
    // job would be refused again, so it is not retried.
    live.deterministic_failure = true;
    apply(live.row, TrialEvent::lost, id.error().message());
    progress_.event(fmt::format("trial {} could not be submitted: {}", live.row.number, id.error().message()),
                    snapshot());
    finish_trial(trial_id);
    return;
  }
  live.job_id = *id;
  // The jobs row is written on the backend's `queued` event, under its native id.
}

void Engine::abandon_launch(Live& live, const Result<std::string>& submitted) {
  if (submitted) {
    // Its job exists: cancel it and wait for its end like any live job's, so that no
    // process outlives the sweep; the trial stays WAITING in the database (`resume`
    // launches it again).
    live.job_id = *submitted;
    live.stop_reason = "cancelled";
    cancel_job(live.job_id);
    return;
  }
  watch_.remove(live.row.id);
  retire_live(live.row.id);
  boost::asio::post(io_, [this] { fill(); check_done(); });
}

void Engine::check_cancel_request() {
  auto request = take_cancel_request(options_.runs_dir / spec_.name);
  if (!request) return;
  const std::string why = "cancelled by `dlsweep cancel`";
  if (request->all) {
    interrupt(why);
    return;
  }
  for (std::int64_t number : request->numbers) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
      if (it->number == number) {
        db::TrialRow row = *it;
        waiting_.erase(it);
        apply(row, TrialEvent::cancel, why);
        break;
      }
    live_.for_each([&](Live& live) {
      if (live.row.number == number && live.stop_reason.empty()) {
        live.stop_reason = why;
        cancel_job(live.job_id);
      }
    });
  }
  boost::asio::post(io_, [this] { fill(); check_done(); });
}

void Engine::tick() {
  if (done_) return;
  live_.for_each([&](Live& live) {
    serve_suggests(live);
    ingest(live);
  });
  check_cancel_request();
  if (done_) return;
  check_enqueue_requests();
  check_pending();
  check_capacity();
  progress_.tick(snapshot());
  clock_->call_after(std::chrono::milliseconds(static_cast<int>(options_.tick_s * 1000)), [this] { tick(); });
}

void Engine::on_backend_event(const JobEvent& ev) {
  if (in_backend_call_ > 0) {
    // Delivered from inside submit()/cancel()/adopt(): the engine is in the middle of
    // something (a walk over its live trials, a launch); the event gets a turn of its own.
    boost::asio::post(io_, [this, ev] { on_job_event(ev); });
    return;
  }
  on_job_event(ev);
}

namespace {
/// Counts the engine's calls into the backend in progress.
struct BackendCall {
  explicit BackendCall(int& n) : n(n) { ++n; }
  ~BackendCall() { --n; }
  BackendCall(const BackendCall&) = delete;
  BackendCall& operator=(const BackendCall&) = delete;
  int& n;
};
}  // namespace

Result<std::string> Engine::submit_job(const sched::JobSpec& job) {
  BackendCall call(in_backend_call_);
  return backend_.submit(job);
}

void Engine::cancel_job(const std::string& job_id) {
  if (job_id.empty()) return;  // no job yet (its submit is still to come, or failed)
  BackendCall call(in_backend_call_);
  backend_.cancel(job_id);
}

Result<std::string> Engine::adopt_job(const sched::JobSpec& job, const std::string& native_id) {
  BackendCall call(in_backend_call_);
  return backend_.adopt(job, native_id);
}

Engine::Live* Engine::retire_live(std::int64_t trial_id) {
  Live* live = live_.retire(trial_id);
  if (live && !release_posted_) {
    release_posted_ = true;
    boost::asio::post(io_, [this] {
      release_posted_ = false;
      live_.release_retired();
    });
  }
  return live;
}

void Engine::check_done() {
  if (done_) return;
  bool nothing_left = live_.empty() && waiting_.empty() && (exhausted_ || interrupted_);
  if (!nothing_left) return;
  // Stopped early (a signal, `dlsweep cancel`, fail_fast, an error) and every trial has
  // ended: whatever the backend still has pending — a site-limit probe two minutes away, a
  // backoff, a poll — may not hold the orchestrator (under --as-job, Slurm's KillWait of 30 s
  // would SIGKILL it). A sweep that finished lets the backend's last handlers run.
  const bool stopping = interrupted_ || !failed_fast_.empty();
  // No trial will be submitted any more: helpers that outlive trials (pilot workers) may go,
  // and nothing that only watched them holds the loop.
  backend_.no_more_work();
  end_loop(/*stop_io=*/stopping);
}

}  // namespace dlsweep::orch
