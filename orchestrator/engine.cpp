#include "orchestrator/engine.hpp"

#include <csignal>
#include <fstream>

#include <fmt/format.h>

#include "common/protocol.hpp"
#include "orchestrator/failure_policy.hpp"
#include "orchestrator/job_builder.hpp"
#include "orchestrator/state_machine.hpp"
#include "orchestrator/trial_files.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;
using sched::JobEvent;
using sched::JobEventKind;

namespace {

// Last non-empty lines of a log file, for failure messages.
std::string tail_of(const fs::path& file, std::size_t max_lines) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (auto& l : lines) out += (out.empty() ? "" : " | ") + l;
  if (out.size() > 400) out = "..." + out.substr(out.size() - 400);
  return out;
}

}  // namespace

Engine::Engine(boost::asio::io_context& io, db::Storage& storage, sched::Backend& backend, const StudySpec& spec,
               std::int64_t study_id, EngineOptions options, Progress& progress)
    : io_(io),
      storage_(storage),
      backend_(backend),
      spec_(spec),
      study_id_(study_id),
      options_(std::move(options)),
      progress_(progress),
      sampler_(search::make_sampler(spec.search.algorithm, spec.space, spec.search.seed)),
      timer_(io),
      signals_(io),
      start_(std::chrono::steady_clock::now()) {
  auto size = sampler_->size();
  if (spec_.search.trials > 0) total_ = size ? std::min(*size, spec_.search.trials) : spec_.search.trials;
  else if (size) total_ = *size;
  counts_.metric = spec_.objective.metric;
}

double Engine::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

SweepSnapshot Engine::snapshot() const {
  SweepSnapshot s = counts_;
  s.total = total_;
  s.created = next_number_;
  s.elapsed_s = elapsed_s();
  return s;
}

void Engine::fatal(const Error& e) {
  if (fatal_) return;
  fatal_ = e;
  progress_.event("error: " + e.message() + " — stopping the sweep", snapshot());
  interrupt("fatal error");
}

Result<SweepOutcome> Engine::run() {
  start_ = std::chrono::steady_clock::now();
  backend_.set_event_handler([this](const JobEvent& ev) { on_job_event(ev); });
  if (options_.handle_signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    wait_for_signal();
  }
  progress_.event(fmt::format("study {}: {} trials, {} at a time on backend {}", spec_.name,
                              total_ >= 0 ? fmt::format("{}", total_) : std::string("?"),
                              backend_.max_concurrent(), backend_.name()),
                  snapshot());
  boost::asio::post(io_, [this] { fill(); tick(); check_done(); });
  io_.run();
  io_.restart();

  SweepOutcome out{interrupted_, detached_, snapshot(), failure_reasons_};
  // A detached study is still RUNNING: its trials are.
  std::string state = detached_ ? "RUNNING" : (fatal_ || interrupted_) ? "STOPPED" : "FINISHED";
  std::string reason = fatal_       ? "stopped on an error: " + fatal_->message()
                       : detached_  ? std::string("orchestrator detached (SIGTERM); `dlsweep resume` follows the trials")
                       : interrupted_ ? std::string("interrupted")
                                      : std::string("all trials done");
  if (auto st = storage_.set_study_state(study_id_, state, reason); !st)
    if (!fatal_) fatal_ = st.error();
  progress_.finish(out.snapshot, fmt::format("study {} {}", spec_.name,
                                             fatal_      ? "stopped on an error"
                                             : detached_ ? "detached: its trials run on"
                                             : interrupted_ ? "interrupted"
                                                            : "finished"));
  if (fatal_) return std::unexpected(*fatal_);
  return out;
}

void Engine::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;  // cancelled: the sweep is over
    if (sig == SIGTERM && options_.detach_on_sigterm && backend_.jobs_outlive_orchestrator()) {
      detach();
      return;
    }
    interrupt(sig == SIGINT ? "interrupted (Ctrl-C)" : "terminated (SIGTERM)");
    wait_for_signal();  // a second Ctrl-C is handled the same way (cancel is idempotent)
  });
}

void Engine::detach() {
  if (done_) return;
  for (auto& [id, live] : live_) ingest(live);
  progress_.event(fmt::format("SIGTERM: detaching; {} live trial(s) keep running on {} — `dlsweep resume {}` follows them",
                              live_.size(), backend_.name(), spec_.name),
                  snapshot());
  detached_ = done_ = true;
  timer_.cancel();
  boost::system::error_code ec;
  signals_.cancel(ec);
  signals_.clear(ec);
  io_.stop();  // the backend's poll timers would keep the loop alive
}

void Engine::interrupt(const std::string& why) {
  if (done_) return;
  bool first = !interrupted_;
  interrupted_ = true;
  if (first) progress_.event(fmt::format("{}: cancelling {} live trial(s)", why, live_.size()), snapshot());
  // Trials that never launched are cancelled on the spot.
  while (!waiting_.empty()) {
    auto row = waiting_.front();
    waiting_.pop_front();
    apply(row, TrialEvent::cancel, why);
  }
  for (auto& [id, live] : live_) {
    if (live.stop_reason.empty()) live.stop_reason = "cancelled";
    backend_.cancel(live.job_id);
  }
  check_done();
}

std::int64_t& Engine::count_of(SweepSnapshot& s, TrialState st) {
  switch (st) {
    case TrialState::waiting: return s.waiting;
    case TrialState::queued: return s.queued;
    case TrialState::running: return s.running;
    case TrialState::complete: return s.complete;
    case TrialState::pruned: return s.pruned;
    case TrialState::failed: return s.failed;
    case TrialState::cancelled: return s.cancelled;
  }
  return s.waiting;
}

bool Engine::apply(db::TrialRow& row, TrialEvent ev, const std::string& reason, std::optional<int> exit_code) {
  auto next = next_state(row.state, row.attempt, ev, spec_.trial.max_retries);
  if (!next) {
    // A job event that does not fit the trial's state (e.g. a late duplicate) is logged
    // and ignored: the state machine, not the backend, has the last word.
    progress_.event(fmt::format("trial {}: ignored {}", row.number, next.error().what), snapshot());
    return false;
  }
  db::TransitionRequest req{row.id, row.state, next->to, next->attempt, "orchestrator", reason, exit_code};
  if (auto st = storage_.transition(req); !st) {
    fatal(st.error());
    return false;
  }
  count_of(counts_, row.state)--;
  count_of(counts_, next->to)++;
  row.state = next->to;
  row.attempt = next->attempt;
  if (exit_code) row.exit_code = exit_code;
  row.message = reason;
  return true;
}

void Engine::fill() {
  if (interrupted_ || done_) return;
  // The backend bounds concurrency itself; its submit window says how many jobs it wants
  // handed over at once (local: as many as run at once; Slurm: whole arrays).
  while (backend_.active() < backend_.submit_window()) {
    if (!waiting_.empty()) {
      auto row = waiting_.front();
      waiting_.pop_front();
      live_[row.id].row = row;
      launch(row.id);
      continue;
    }
    if (exhausted_) break;
    if (total_ >= 0 && next_number_ >= total_) { exhausted_ = true; break; }
    auto params = sampler_->next(next_number_, history_);
    if (!params) { exhausted_ = true; break; }
    if (auto st = create_next(next_number_, *params); !st) { fatal(st.error()); return; }
  }
}

Status Engine::create_next(std::int64_t number, const search::Params& params) {
  fs::path dir = trial_dir_for(options_.runs_dir, spec_.name, number);
  // Write-ahead: params.json and the WAITING row exist before any job does.
  if (auto st = prepare_trial_dir(dir, params); !st) return st;
  auto id = storage_.create_trial(study_id_, number, params, dir.string());
  if (!id) return std::unexpected(id.error());
  ++next_number_;
  counts_.waiting++;
  history_index_[*id] = history_.size();
  history_.push_back(search::TrialRecord{number, params, false, std::nullopt});
  Live& live = live_[*id];
  live.row = db::TrialRow{*id, study_id_, number, TrialState::waiting, 0, dir.string(), params, std::nullopt, ""};
  launch(*id);
  return {};
}

void Engine::launch(std::int64_t trial_id) {
  Live& live = live_.at(trial_id);
  fs::path dir = live.row.trial_dir;
  clear_control(dir);
  live.stop_reason.clear();
  live.deterministic_failure = false;
  live.tail = std::make_unique<JsonlTail>(metrics_file(dir));
  live.curve = {};
  live.prune_note.clear();
  live.last_value.reset();
  live.best_value.reset();
  live.reported.clear();

  sched::JobSpec job = build_job(spec_, options_.train_binary, trial_id, live.row.number, live.row.attempt, dir);

  auto id = backend_.submit(job);
  // A requeued trial (QUEUED after its job died with a previous orchestrator) gets a new
  // job for the same attempt; a WAITING one is launched.
  if (live.row.state == TrialState::waiting &&
      !apply(live.row, TrialEvent::launch, id ? "submitted to " + std::string(backend_.name()) : "submit failed"))
    return;
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

void Engine::on_job_event(const JobEvent& ev) {
  auto it = live_.find(ev.trial_id);
  if (it == live_.end() || it->second.row.attempt != ev.attempt || it->second.job_id.empty()) return;
  Live& live = it->second;
  switch (ev.kind) {
    case JobEventKind::queued:
      record_job(ev, "QUEUED");
      break;
    case JobEventKind::requeued:
      // Preempted or warned of its time limit: it checkpointed and went back to the queue;
      // same attempt, it resumes from its checkpoint when it starts again.
      record_job(ev, "REQUEUED");
      if (is_active(live.row.state)) {
        apply(live.row, TrialEvent::requeued, ev.message.empty() ? "requeued" : "requeued: " + ev.message);
        progress_.event(fmt::format("trial {} requeued{}", live.row.number, ev.message.empty() ? "" : ": " + ev.message),
                        snapshot());
      }
      break;
    case JobEventKind::started:
      record_job(ev, "RUNNING");
      if (live.row.state == TrialState::queued) {
        apply(live.row, TrialEvent::started, "started");
        progress_.tick(snapshot());
      }
      break;
    case JobEventKind::exited:
    case JobEventKind::cancelled:
    case JobEventKind::lost:
      on_terminal(live, ev);
      break;
  }
}

void Engine::record_job(const JobEvent& ev, const std::string& state) {
  // The backend's own id ("1234_5") when it has one: that is what a user greps sacct for.
  const std::string& id = ev.native_id.empty() ? ev.job_id : ev.native_id;
  if (auto st = storage_.record_job({ev.trial_id, ev.attempt, std::string(backend_.name()), id, state}); !st)
    fatal(st.error());
}

std::string Engine::failure_message(const Live& live, const JobEvent& ev, const std::string& verdict) const {
  std::string what;
  if (ev.kind == JobEventKind::lost) what = "lost: " + ev.message;
  else if (ev.kind == JobEventKind::cancelled) what = ev.message.empty() ? verdict : ev.message;
  else what = verdict;
  // The backend's own words ("out of memory (OUT_OF_MEMORY)", "node failure") say more.
  if (ev.kind == JobEventKind::exited && !ev.message.empty() && ev.message.find("exit") == std::string::npos)
    what += " (" + ev.message + ")";
  std::string err = tail_of(fs::path(live.row.trial_dir) / protocol::kStderrFile, 3);
  if (!err.empty()) what += "; stderr: " + err;
  return what;
}

void Engine::on_terminal(Live& live, const JobEvent& ev) {
  ingest(live, /*may_prune=*/false);  // the last records, written just before exit
  std::int64_t id = live.row.id;
  record_job(ev, std::string(sched::to_string(ev.kind)));
  if (live.adopted && ev.kind == JobEventKind::lost && live.stop_reason.empty() && !interrupted_) {
    // A job left by the previous orchestrator whose end the scheduler cannot tell (e.g. an
    // array task that finished while nobody watched, on a cluster whose accounting knows
    // only plain job ids): run the same attempt again; it resumes from its checkpoint.
    requeue_adopted(live, ev.message);
    return;
  }
  if (live.row.state == TrialState::queued && ev.kind == JobEventKind::exited)
    apply(live.row, TrialEvent::started, "started");

  bool ok = ev.kind == JobEventKind::exited && ev.signal == 0 && ev.exit_code == protocol::kExitDone;
  bool stopped_on_request =
      !live.stop_reason.empty() &&
      (ev.kind == JobEventKind::cancelled ||
       (ev.kind == JobEventKind::exited && ev.exit_code == protocol::kExitStopped));
  std::optional<int> code;
  if (ev.kind == JobEventKind::exited && ev.signal == 0) code = ev.exit_code;

  // A clean exit without the objective is no result: the study cannot rank it.
  std::optional<std::string> no_objective;
  if (ok) no_objective = missing_objective(spec_.objective.metric, live.reported);
  if (ok && !no_objective) {
    completed_curves_.push_back({prune_group(live.row.params), live.curve});
    apply(live.row, TrialEvent::completed, "finished", code);
    // Only COMPLETE trials can be the best: one that reached a high value and then
    // diverged or crashed is no schedule to recommend.
    if (live.best_value) {
      bool better = !counts_.best_value || (spec_.objective.mode == "max" ? *live.best_value > *counts_.best_value
                                                                          : *live.best_value < *counts_.best_value);
      if (better) {
        counts_.best_value = live.best_value;
        counts_.best_trial = live.row.number;
      }
    }
    progress_.event(fmt::format("trial {} complete: {} = {}", live.row.number, spec_.objective.metric,
                                live.last_value ? fmt::format("{:.4g}", *live.last_value) : "n/a"),
                    snapshot());
  } else if (no_objective) {
    // Deterministic: the same program with the same params reports the same metrics.
    live.deterministic_failure = true;
    const std::string why =
        *no_objective + (spec_.trial.max_retries > live.row.attempt ? std::string(" — ") + kNotRetried : "");
    apply(live.row, TrialEvent::failed, why, code);
    note_failure(*no_objective);
    progress_.event(fmt::format("trial {} failed: {}", live.row.number, *no_objective), snapshot());
  } else if (stopped_on_request && live.stop_reason == "pruned") {
    const std::string why = live.prune_note.empty() ? "pruned" : live.prune_note;
    apply(live.row, TrialEvent::pruned, why, code);
    progress_.event(fmt::format("trial {} {}", live.row.number, why), snapshot());
  } else if (stopped_on_request) {
    apply(live.row, TrialEvent::cancel, live.stop_reason, code);
  } else {
    // Exit 2 (bad parameters), 3 (diverged), a missing program repeat on every retry with
    // the same params and seed: retrying only burns machine time (failure_policy.hpp).
    const FailureVerdict verdict = classify_failure(ev.kind, ev.exit_code, ev.signal, ev.cannot_start);
    std::string why = failure_message(live, ev, verdict.why);
    live.deterministic_failure = !verdict.retry;
    if (!verdict.retry && spec_.trial.max_retries > live.row.attempt) why += std::string(" — ") + kNotRetried;
    apply(live.row, ev.kind == JobEventKind::lost ? TrialEvent::lost : TrialEvent::failed, why, code);
    note_failure(verdict.why);
    progress_.event(fmt::format("trial {} failed (attempt {}): {}", live.row.number, live.row.attempt, why),
                    snapshot());
  }
  finish_trial(id);
}

void Engine::note_failure(const std::string& why) {
  for (auto& [reason, n] : failure_reasons_)
    if (reason == why) { ++n; return; }
  failure_reasons_.emplace_back(why, 1);
}

void Engine::finish_trial(std::int64_t trial_id) {
  auto node = live_.extract(trial_id);
  Live& live = node.mapped();
  if (auto h = history_index_.find(trial_id); h != history_index_.end()) {
    auto& rec = history_[h->second];
    rec.finished = is_final(live.row.state) || live.row.state == TrialState::failed;
    rec.value = live.best_value;
  }
  if (live.row.state == TrialState::failed && !interrupted_ && !live.deterministic_failure &&
      live.row.attempt < spec_.trial.max_retries) {
    if (auto st = rotate_metrics(live.row.trial_dir, live.row.attempt); !st) { fatal(st.error()); return; }
    if (apply(live.row, TrialEvent::retry, fmt::format("retry {} of {}", live.row.attempt + 1, spec_.trial.max_retries)))
      waiting_.push_back(live.row);
  }
  boost::asio::post(io_, [this] { fill(); check_done(); });
}

void Engine::ingest(Live& live, bool may_prune) {
  if (!live.tail) return;
  auto lines = live.tail->read_new_lines();
  if (!lines) { progress_.event("warning: " + lines.error().message(), snapshot()); return; }
  if (lines->empty()) return;
  std::vector<protocol::Record> records;
  bool new_eval = false;
  records.reserve(lines->size());
  for (const auto& l : *lines) {
    auto r = protocol::parse_record(l);
    if (!r) {
      progress_.event(fmt::format("trial {}: skipped a bad line in {}: {}", live.row.number,
                                  live.tail->path().string(), r.error().message()),
                      snapshot());
      continue;
    }
    if (r->kind == protocol::RecordKind::eval || r->kind == protocol::RecordKind::final) {
      for (const auto& [name, value] : r->metrics) live.reported.insert(name);
      if (auto m = r->metrics.find(spec_.objective.metric); m != r->metrics.end() && m->second == m->second) {
        live.curve.points.emplace_back(spec_.pruner.by == "step" ? double(r->step) : r->epoch, m->second);
        new_eval = new_eval || r->kind == protocol::RecordKind::eval;
        live.last_value = m->second;
        bool better = !live.best_value || (spec_.objective.mode == "max" ? m->second > *live.best_value
                                                                          : m->second < *live.best_value);
        if (better) live.best_value = m->second;
      }
    }
    records.push_back(std::move(*r));
  }
  if (auto n = storage_.ingest(live.row.id, live.row.attempt, records); !n) fatal(n.error());
  if (may_prune && new_eval) maybe_prune(live);
}

nlohmann::json Engine::prune_group(const nlohmann::json& params) const {
  nlohmann::json g = nlohmann::json::object();
  for (const auto& k : spec_.pruner.group_by) g[k] = params.contains(k) ? params[k] : nlohmann::json();
  return g;
}

void Engine::maybe_prune(Live& live) {
  if (spec_.pruner.kind != "median" || !live.stop_reason.empty() || interrupted_ || done_) return;
  const search::MedianRule rule{spec_.pruner.startup_trials, spec_.pruner.warmup, spec_.objective.mode == "max"};
  const nlohmann::json group = prune_group(live.row.params);
  std::vector<search::Curve> peers;
  for (const auto& c : completed_curves_)
    if (c.group == group) peers.push_back(c.curve);
  const auto v = search::median_rule(rule, live.curve, peers);
  if (!v.prune) return;
  std::string among;
  for (const auto& [k, val] : group.items()) among += fmt::format("{}{}={}", among.empty() ? " with " : ", ", k, val.dump());
  live.stop_reason = "pruned";
  live.prune_note = fmt::format("pruned at {} {:g}: best {} {:.4g} is worse than the median {:.4g} of {} completed "
                                "trial(s){} by then",
                                spec_.pruner.by, v.at, spec_.objective.metric, v.value, v.median, v.compared, among);
  if (auto st = request_stop(live.row.trial_dir, "pruned"); !st) {
    progress_.event(fmt::format("warning: trial {}: cannot ask it to stop: {}", live.row.number, st.error().message()),
                    snapshot());
    return;
  }
  progress_.event(fmt::format("trial {} falls behind ({} {:g}: {:.4g}, median {:.4g}); asked to stop", live.row.number,
                              spec_.pruner.by, v.at, v.value, v.median),
                  snapshot());
}

void Engine::tick() {
  if (done_) return;
  for (auto& [id, live] : live_) ingest(live);
  check_cancel_request();
  if (done_) return;
  progress_.tick(snapshot());
  timer_.expires_after(std::chrono::milliseconds(static_cast<int>(options_.tick_s * 1000)));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

void Engine::check_cancel_request() {
  fs::path file = options_.runs_dir / spec_.name / kCancelRequestFile;
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  std::ifstream in(file);
  std::vector<std::int64_t> numbers;
  std::int64_t n;
  bool all = false;
  std::string word;
  while (in >> word) {
    if (word == "all") all = true;
    else if (std::sscanf(word.c_str(), "%lld", reinterpret_cast<long long*>(&n)) == 1) numbers.push_back(n);
  }
  fs::remove(file, ec);
  if (all) {
    interrupt("cancelled by `dlsweep cancel`");
    return;
  }
  for (std::int64_t number : numbers) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
      if (it->number == number) {
        db::TrialRow row = *it;
        waiting_.erase(it);
        apply(row, TrialEvent::cancel, "cancelled by `dlsweep cancel`");
        break;
      }
    for (auto& [id, live] : live_)
      if (live.row.number == number && live.stop_reason.empty()) {
        live.stop_reason = "cancelled by `dlsweep cancel`";
        backend_.cancel(live.job_id);
      }
  }
  boost::asio::post(io_, [this] { fill(); check_done(); });
}

void Engine::check_done() {
  if (done_) return;
  bool nothing_left = live_.empty() && waiting_.empty() && (exhausted_ || interrupted_);
  if (!nothing_left) return;
  done_ = true;
  timer_.cancel();
  boost::system::error_code ec;
  signals_.cancel(ec);
  signals_.clear(ec);
}

}  // namespace dlsweep::orch
