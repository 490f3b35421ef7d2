// engine_events.cpp — the engine's reactions: job events from the backend become
// state-machine transitions (decided by next_state / decide_terminal, recorded through
// Storage::transition), metrics.jsonl is ingested, and the pruner is asked (decide_prune).
#include <algorithm>
#include <fstream>
#include <set>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "common/objective.hpp"
#include "common/pareto.hpp"
#include "engine/job_builder.hpp"
#include "engine/trial_objectives.hpp"
#include "common/protocol.hpp"
#include "engine/engine.hpp"
#include "study/did_you_mean.hpp"
#include "engine/failure_policy.hpp"
#include "engine/state_machine.hpp"
#include "engine/trial_files.hpp"
#include "engine/trial_outcome.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;
using sched::JobEvent;
using sched::JobEventKind;

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
  if (auto st = db().transition(req); !st) {
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

void Engine::on_job_event(const JobEvent& ev) {
  Live* found = live_.find(ev.trial_id);
  if (!found || found->row.attempt != ev.attempt || found->job_id.empty()) return;
  Live& live = *found;
  if (ev.kind != JobEventKind::pending && ev.kind != JobEventKind::cancelled) note_accepted(live, ev);
  switch (ev.kind) {
    case JobEventKind::queued:
      record_job(ev, "QUEUED");
      live.native_id = ev.native_id;
      note_queued(live, true);
      break;
    case JobEventKind::pending:
      on_pending(live, ev);
      break;
    case JobEventKind::requeued:
      // Preempted or warned of its time limit: it checkpointed and went back to the queue;
      // same attempt, it resumes from its checkpoint when it starts again.
      record_job(ev, "REQUEUED");
      note_queued(live, true);
      if (is_active(live.row.state)) {
        apply(live.row, TrialEvent::requeued, ev.message.empty() ? "requeued" : "requeued: " + ev.message);
        progress_.event(fmt::format("trial {} requeued{}", live.row.number, ev.message.empty() ? "" : ": " + ev.message),
                        snapshot());
      }
      break;
    case JobEventKind::started:
      record_job(ev, "RUNNING");
      note_queued(live, false);
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

void Engine::note_accepted(Live& live, const JobEvent& ev) {
  if (live.row.state != TrialState::waiting) return;
  const std::string to = std::string(backend_.name()) + (ev.native_id.empty() ? "" : " as " + ev.native_id);
  if (!apply(live.row, TrialEvent::launch, "submitted to " + to)) return;
  progress_.tick(snapshot());
}

void Engine::record_job(const JobEvent& ev, const std::string& state) {
  // The backend's own id ("1234_5") when it has one: that is what a user greps sacct for.
  const std::string& id = ev.native_id.empty() ? ev.job_id : ev.native_id;
  if (auto st = db().record_job({ev.trial_id, ev.attempt, std::string(backend_.name()), id, state}); !st)
    fatal(st.error());
}

void Engine::on_terminal(Live& live, const JobEvent& ev) {
  ingest(live, /*may_prune=*/false);  // the last records, written just before exit
  std::int64_t id = live.row.id;
  record_job(ev, std::string(sched::to_string(ev.kind)));
  if (live.adopted && ev.kind == JobEventKind::lost && !ev.launch_failed && live.stop_reason.empty() &&
      !interrupted_) {
    // A job left by the previous orchestrator whose end the scheduler cannot tell (e.g. an
    // array task that finished while nobody watched, on a cluster whose accounting knows
    // only plain job ids): run the same attempt again; it resumes from its checkpoint.
    requeue_adopted(live, ev.message);
    return;
  }
  TerminalFacts facts{live.row.state, live.row.attempt, spec_.trial.max_retries, live.stop_reason, live.prune_note,
                      spec_.objective.metric, live.curve.reported, ""};
  facts.objective_nonfinite = live.curve.last_nonfinite;
  // The program has ended on its own: a last line still without its newline will never be
  // completed (one killed by a signal may have been cut mid-write: no news).
  if (live.tail && ev.kind == JobEventKind::exited && ev.signal == 0)
    facts.unterminated_line = unterminated_tail(live.tail->path(), live.tail->offset());
  if (!facts.unterminated_line.empty())
    progress_.event(fmt::format("trial {}: the last line of {} has no newline at its end: not read ({}) (fix: end "
                                "every record with a newline and flush)",
                                live.row.number, live.tail->path().string(), facts.unterminated_line),
                    snapshot());
  const bool clean_exit = ev.kind == JobEventKind::exited && ev.signal == 0 && ev.exit_code == protocol::kExitDone;
  const fs::path stderr_file = fs::path(live.row.trial_dir) / protocol::kStderrFile;
  if (!clean_exit) facts.stderr_tail = log_tail(stderr_file, 3);
  // The program's own word on a clean exit (outcome.json: it pruned itself, or completed
  // after a prune was advised); a damaged file is said and ignored.
  if (clean_exit) {
    const fs::path outcome_file = fs::path(live.row.trial_dir) / protocol::kOutcomeFile;
    ProgramWord word = take_program_outcome(read_program_outcome(live.row.trial_dir), live.row.attempt,
                                            outcome_file.string());
    if (!word.warning.empty())
      progress_.event(fmt::format("warning: trial {}: {}", live.row.number, word.warning), snapshot());
    facts.program = std::move(word.outcome);
  }
  const TerminalDecision d = decide_terminal(ev, facts);

  if (d.mark_started) apply(live.row, TrialEvent::started, "started");
  live.deterministic_failure = d.deterministic;
  apply(live.row, d.event, d.why, d.exit_code);
  const std::int64_t number = live.row.number;
  if (d.outcome != Outcome::failed && d.outcome != Outcome::no_objective) last_failure_.erase(number);
  // What the samplers see of the ended attempt: its value, curve, objectives and constraints.
  search::TrialRecord* rec = history_of(id);
  if (rec) {
    // objective.rank_by: what the samplers (and the progress line's best) take as the trial's value.
    rec->value = spec_.objective.rank_final() ? live.curve.last_value : live.curve.best_value;
    rec->curve = live.curve.points;
    TrialFigures figures = live.curve.figures;
    figures.ranks = trial_ranks(spec_, live.row.params);
    fill_objectives(*rec, spec_, figures);
  }
  switch (d.outcome) {
    case Outcome::complete: {
      // Only COMPLETE trials can be the best (one that reached a high value and then
      // diverged or crashed is no schedule to recommend), and only feasible ones.
      if (rec) note_best(number, rec->value, rec->constraints);
      const auto& last = live.curve.last_value;
      progress_.event(fmt::format("trial {} complete{}: {} = {}", number,
                                  d.why == "finished" ? "" : " (" + d.why + ")", spec_.objective.metric,
                                  last ? fmt::format("{:.4g}", *last) : "n/a"),
                      snapshot());
      if (!spec_.trial.embedded) check_unread_params(live);
      break;
    }
    case Outcome::no_objective:
      note_failure(number, d.failure);
      progress_.event(fmt::format("trial {} failed: {}", number, d.failure), snapshot());
      // The same program reports the same metrics whatever its params: fail_fast counts a
      // missing objective (not a divergence: that depends on the params, e.g. the LR).
      if (d.failure != diverged_phrase(spec_.objective.metric)) check_fail_fast(number, d.failure, "");
      break;
    case Outcome::pruned:
      progress_.event(fmt::format("trial {} {}", number, d.why), snapshot());
      break;
    case Outcome::cancelled:
      progress_.event(fmt::format("trial {} cancelled: {}", number, d.why), snapshot());
      break;
    case Outcome::failed: {
      // The summary quotes the program's last words: "exit code 1" alone hides the
      // ModuleNotFoundError that says what to fix.
      const std::string last_line = ev.kind == JobEventKind::exited ? log_tail(stderr_file, 1) : "";
      // A job the backend ended says why ("timed out after 600 s"): the summary quotes it,
      // not just "cancelled by the backend".
      const std::string said = ev.kind == JobEventKind::cancelled ? ev.message : last_line;
      note_failure(number, said.empty() ? d.failure : d.failure + ": " + said);
      progress_.event(fmt::format("trial {} failed (attempt {}): {}", number, live.row.attempt, d.why), snapshot());
      // A program that cannot be started (not executable, missing) fails every trial alike.
      if (ev.kind == JobEventKind::exited || ev.cannot_start) check_fail_fast(number, d.failure, last_line);
      break;
    }
  }
  finish_trial(id);
}

void Engine::note_failure(std::int64_t number, const std::string& why) {
  if (std::find(failure_order_.begin(), failure_order_.end(), why) == failure_order_.end()) failure_order_.push_back(why);
  last_failure_[number] = why;
}

void Engine::check_fail_fast(std::int64_t number, const std::string& failure, const std::string& last_stderr_line) {
  if (spec_.trial.fail_fast <= 0 || counts_.complete > 0 || !failed_fast_.empty() || interrupted_) return;
  // The same failure, not the same text: each trial's own paths and numbers are taken out.
  auto& trials = same_failures_[failure_signature(failure, last_stderr_line)];
  trials.insert(number);
  if (trials.size() < static_cast<std::size_t>(spec_.trial.fail_fast)) return;
  fail_fast(fmt::format("{} trials failed the same way before any completed ({}{})", trials.size(), failure,
                        last_stderr_line.empty() ? "" : "; last stderr line: " + last_stderr_line));
}

void Engine::check_unread_params(const Live& live) {
  if (!failed_fast_.empty() || interrupted_) return;
  // Written by dlsweep_trial's params() (the keys the program read, and those it read with a
  // default because the study did not set them). A program without the library writes none.
  std::ifstream in(fs::path(live.row.trial_dir) / "params_read.json");
  if (!in) return;
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("read") || !j["read"].is_array()) return;
  std::set<std::string> read, defaulted;
  for (const auto& k : j["read"]) if (k.is_string()) read.insert(k.get<std::string>());
  if (j.contains("defaulted") && j["defaulted"].is_array())
    for (const auto& k : j["defaulted"]) if (k.is_string()) defaulted.insert(k.get<std::string>());
  std::set<std::string> study_params;
  for (const auto& [k, _] : spec_.space.fixed.items()) study_params.insert(k);
  for (const auto& d : spec_.space.dims) study_params.insert(d.name);
  std::vector<std::string> unread;
  study_params.erase("ranks");  // dlsweep reads it itself: the ranks it launches the trial on
  for (const auto& [k, _] : live.row.params.items())
    if (study_params.count(k) && !read.count(k) &&
        std::find(spec_.trial.unread_params.begin(), spec_.trial.unread_params.end(), k) ==
            spec_.trial.unread_params.end())
      unread.push_back(k);
  if (unread.empty()) return;
  std::vector<std::string_view> candidates(defaulted.begin(), defaulted.end());
  std::string list;
  for (const auto& k : unread) {
    list += fmt::format("{}'{}'", list.empty() ? "" : ", ", k);
    if (auto m = did_you_mean(k, candidates)) list += fmt::format(" (it read '{}' with a default: did you mean that?)", *m);
  }
  stop_sweep(fmt::format("trial {}'s program never read the study parameter{} {}: every trial would run without "
                         "{}",
                         live.row.number, unread.size() > 1 ? "s" : "", list, unread.size() > 1 ? "them" : "it"),
             fmt::format("name it in the study as the program reads it, or list it under trial.unread_params if "
                         "it is meant to go unread; then `dlsweep submit {} --replace`",
                         spec_.name));
}

void Engine::stop_sweep(const std::string& why, const std::string& fix) {
  failed_fast_ = why;
  stop_fix_ = fix;
  exhausted_ = true;
  progress_.event(fmt::format("{}: launching no more (fix: {})", why, fix), snapshot());
  waiting_.clear();
  live_.for_each([&](Live& live) {
    if (!live.stop_reason.empty()) return;
    live.stop_reason = "cancelled: the sweep stopped";
    cancel_job(live.job_id);
  });
  boost::asio::post(io_, [this] { check_done(); });
}

void Engine::fail_fast(const std::string& why) {
  failed_fast_ = why;
  exhausted_ = true;
  progress_.event(fmt::format("{}: launching no more (trial.fail_fast: {}); {}", why, spec_.trial.fail_fast,
                              fail_fast_fix(why, "", spec_.name, spec_.source)),
                  snapshot());
  // Trials not launched yet stay WAITING in the database: resume launches them.
  waiting_.clear();
  live_.for_each([&](Live& live) {
    if (!live.stop_reason.empty()) return;
    live.stop_reason = "cancelled: the sweep failed fast";
    cancel_job(live.job_id);
  });
  boost::asio::post(io_, [this] { check_done(); });
}

void Engine::stop_no_objective(Live& live) {
  live.stop_reason = kStopNoObjective;
  const auto why = missing_objective(spec_.objective.metric, live.curve.reported);
  progress_.event(fmt::format("trial {}: its first evaluation has no {} — {}; stopping it: it can never count (fix: "
                              "report {} in every evaluation record, or set objective.metric to one it reports)",
                              live.row.number, spec_.objective.metric, why.value_or("?"), spec_.objective.metric),
                  snapshot());
  (void)request_stop(live.row.trial_dir, kStopNoObjective);
  cancel_job(live.job_id);
}

void Engine::note_best(std::int64_t number, const std::optional<double>& value, const std::vector<double>& constraints) {
  if (!value || total_violation(constraints) > 0) return;
  if (!counts_.best_value || better_value(*value, *counts_.best_value, axis_.maximize)) {
    counts_.best_value = value;
    counts_.best_trial = number;
  }
}

void Engine::finish_trial(std::int64_t trial_id) {
  watch_.remove(trial_id);
  Live* ended = retire_live(trial_id);
  if (!ended) return;
  Live& live = *ended;
  // Its value, curve and objectives were recorded by on_terminal (a job that never ran has none).
  if (auto* rec = history_of(trial_id)) rec->status = history_status(live.row.state);
  if (live.row.state == TrialState::failed && !interrupted_ && failed_fast_.empty() && !live.deterministic_failure &&
      live.row.attempt < spec_.trial.max_retries) {
    if (auto st = rotate_metrics(live.row.trial_dir, live.row.attempt); !st) { fatal(st.error()); return; }
    if (apply(live.row, TrialEvent::retry, fmt::format("retry {} of {}", live.row.attempt + 1, spec_.trial.max_retries))) {
      waiting_.push_back(live.row);
      if (auto* rec = history_of(trial_id)) rec->status = search::TrialStatus::running;
    }
  }
  boost::asio::post(io_, [this] { fill(); check_done(); });
}

void Engine::ingest(Live& live, bool may_prune) {
  // In batches of at most JsonlTail::kMaxBatchBytes (bounded memory), until the file's end.
  do ingest_batch(live, may_prune);
  while (live.tail && live.tail->more());
  // Tell the trial its records are decided on (any stop is already in control.json), so that
  // a program waiting in should_stop() after a report gets the answer for that report.
  // Only where a report can be answered with a stop: elsewhere nobody waits for the file.
  if (may_prune && decides_on_reports(spec_) && !live.curve.seqs.empty() &&
      live.curve.seqs.rbegin()->first > live.decided_seq) {
    live.decided_seq = live.curve.seqs.rbegin()->first;
    (void)write_decided(live.row.trial_dir, live.row.attempt, live.decided_seq);  // best effort
  }
}

void Engine::ingest_batch(Live& live, bool may_prune) {
  if (!live.tail) return;
  auto lines = live.tail->read_new_lines();
  if (!lines) { progress_.event("warning: " + lines.error().message(), snapshot()); return; }
  // Lines too long to be records were skipped as they streamed past (bounded memory).
  for (const auto& o : live.tail->take_oversized()) {
    ++live.curve.bad_lines;  // its seq, if any, is no gap
    progress_.event(fmt::format("trial {}: skipped a line of {} bytes at byte {} of {} (a record is at most {} bytes; "
                                "fix: write only metrics records there, e.g. print tensors to stdout instead)",
                                live.row.number, o.bytes, o.offset, live.tail->path().string(),
                                JsonlTail::kMaxLineBytes),
                    snapshot());
  }
  if (lines->empty()) return;
  std::vector<protocol::Record> records;
  bool new_eval = false, no_objective = false;
  const std::size_t first_new = live.curve.points.size();
  records.reserve(lines->size());
  for (const auto& l : *lines) {
    auto r = protocol::parse_record(l);
    if (!r) {
      ++live.curve.bad_lines;  // its seq, if any, is no gap
      progress_.event(fmt::format("trial {}: skipped a bad line in {}: {}", live.row.number,
                                  live.tail->path().string(), r.error().message()),
                      snapshot());
      continue;
    }
    // (attempt, seq) is a record's key: the database keeps the first record of a seq. A
    // second one with other content is dropped here too, and said, so that the curve, the
    // value and the progress line are those of the records stored. The same line again (a
    // file re-read from its start after it shrank) is no news.
    const std::size_t line_hash = std::hash<std::string>{}(l);
    // seq counts the file's lines: a jump means lines dlsweep never saw, as when a program
    // rewrites metrics.jsonl (open "w") instead of appending to it. Said, not silently lost.
    const std::int64_t bad_lines = std::exchange(live.curve.bad_lines, 0);
    if (!live.curve.seqs.empty() && r->seq > live.curve.seqs.rbegin()->first + 1 + bad_lines)
    {
      const std::int64_t from = live.curve.seqs.rbegin()->first + 1, to = r->seq - 1;
      progress_.event(fmt::format("trial {}: seq jumps from {} to {} in {}: {} never reached dlsweep (fix: append to "
                                  "the file (open it with \"a\"), never rewrite it, and number records 0,1,2,... per "
                                  "attempt)",
                                  live.row.number, from - 1, r->seq, live.tail->path().string(),
                                  from == to ? fmt::format("record {}", from) : fmt::format("records {}..{}", from, to)),
                      snapshot());
    }
    if (auto [at, fresh] = live.curve.seqs.emplace(r->seq, line_hash); !fresh) {
      if (at->second != line_hash)
        progress_.event(fmt::format("trial {}: skipped a line in {}: seq {} was already used by an earlier record of "
                                    "this attempt (fix: number records 0,1,2,... per attempt; a rerun of the same "
                                    "attempt continues after the highest seq in the file)",
                                    live.row.number, live.tail->path().string(), r->seq),
                        snapshot());
      continue;
    }
    const std::size_t evals_before = live.curve.evals;
    if (live.curve.add(*r, axis_)) new_eval = true;
    if (!live.objective_checked && live.curve.evals > evals_before) {
      const FirstEval check = first_eval_check(spec_, r->metrics);
      live.objective_checked = check != FirstEval::undecided;
      no_objective = no_objective || check == FirstEval::missing;
    }
    records.push_back(std::move(*r));
  }
  if (auto n = db().ingest(live.row.id, live.row.attempt, records); !n) fatal(n.error());
  if (auto* rec = history_of(live.row.id)) rec->curve = live.curve.points;  // running trials count too (asha)
  if (may_prune && no_objective && live.stop_reason.empty() && !interrupted_) {
    stop_no_objective(live);
    return;
  }
  if (may_prune && new_eval && pbt_stop_at_end(live)) return;
  if (may_prune && new_eval && !maybe_stop_at_target(live)) maybe_prune(live, first_new);
}

bool Engine::maybe_stop_at_target(Live& live) {
  const auto& target = spec_.objective.target;
  const auto& best = live.curve.best_value;
  if (!spec_.objective.stop_at_target || !target || !best || !live.stop_reason.empty() || interrupted_ || done_)
    return !live.stop_reason.empty();
  if (!reached_target(*best, *target, axis_.maximize)) return false;
  live.stop_reason = kStopAtTarget;
  if (auto st = request_stop(live.row.trial_dir, kStopAtTarget); !st) {
    progress_.event(fmt::format("warning: trial {}: cannot ask it to stop: {}", live.row.number, st.error().message()),
                    snapshot());
    return true;
  }
  const auto& p = live.curve.points.back();
  progress_.event(fmt::format("trial {} reached the target {} = {:g} at epoch {:.3g} (step {:g}); asked to stop "
                              "(objective.stop_at_target)",
                              live.row.number, spec_.objective.metric, *best, p.epoch, p.step),
                  snapshot());
  return true;
}

void Engine::maybe_prune(Live& live, std::size_t first_new) {
  if (!live.stop_reason.empty() || interrupted_ || done_) return;
  search::TrialRecord trial{live.row.number, live.row.params, search::TrialStatus::running, std::nullopt,
                            live.curve.points};
  auto stop = decide_prune(*pruner_, spec_.objective.metric, trial, first_new, history_);
  if (!stop) return;
  live.stop_reason = "pruned";
  live.prune_note = stop->note;
  if (auto st = request_stop(live.row.trial_dir, "pruned"); !st) {
    progress_.event(fmt::format("warning: trial {}: cannot ask it to stop: {}", live.row.number, st.error().message()),
                    snapshot());
    return;
  }
  progress_.event(fmt::format("trial {} {}; asked to stop", live.row.number, stop->line), snapshot());
}

}  // namespace dlsweep::orch
