// engine_restore.cpp — Engine::restore and its helpers: how `dlsweep resume` picks a study
// back up from the database (and, for batch schedulers, from the jobs still on the
// controller). The live event loop is in engine.cpp.
#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/objective.hpp"
#include "engine/job_builder.hpp"
#include "engine/trial_objectives.hpp"
#include "common/protocol.hpp"

#include "engine/engine.hpp"
#include "engine/failure_policy.hpp"
#include "engine/job_builder.hpp"
#include "engine/trial_files.hpp"
#include "engine/trial_outcome.hpp"

namespace dlsweep::orch {

namespace {

/// Its outcome.json names this attempt and says PRUNED: it pruned itself (an objective's own
/// TrialPruned, which writes no `final` record) and exited 0 while no orchestrator watched.
bool pruned_itself_on_disk(const db::TrialRow& row) {
  const ProgramWord w = take_program_outcome(read_program_outcome(row.trial_dir), row.attempt, {});
  return w.outcome && w.outcome->state == protocol::ProgramState::pruned;
}

/// "study/trial/attempt" -> (trial id, attempt) when `token` names `study`.
std::optional<std::pair<std::int64_t, int>> parse_token(const std::string& token, const std::string& study) {
  if (token.size() <= study.size() + 1 || token.compare(0, study.size(), study) != 0 || token[study.size()] != '/')
    return std::nullopt;
  std::string_view rest = std::string_view(token).substr(study.size() + 1);
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::int64_t trial = 0;
  int attempt = 0;
  auto a = std::from_chars(rest.data(), rest.data() + slash, trial);
  auto b = std::from_chars(rest.data() + slash + 1, rest.data() + rest.size(), attempt);
  if (a.ec != std::errc() || a.ptr != rest.data() + slash || b.ec != std::errc() || b.ptr != rest.data() + rest.size())
    return std::nullopt;
  return std::pair{trial, attempt};
}

}  // namespace

Status Engine::restore(const std::vector<db::TrialRow>& trials, const std::vector<db::TrialSummary>& summaries,
                       const std::vector<db::JobRow>& jobs) {
  if (auto st = pbt_restore(); !st) return st;
  const bool follow = backend_.jobs_outlive_orchestrator();
  // token -> (native id, scheduler state) of the study's jobs still on the scheduler.
  std::map<std::string, std::pair<std::string, std::string>> surviving;
  std::set<std::string> ended;  // tokens of listed jobs that have already ended
  std::map<std::int64_t, std::int64_t> number_of;  // trial id -> trial number, for messages
  for (const auto& t : trials) number_of[t.id] = t.number;
  std::size_t unreadable = 0;
  if (follow) {
    auto found = backend_.surviving_jobs(spec_.name);
    if (!found)
      return fail(fmt::format("cannot list the study's jobs on {}: {}", backend_.name(), found.error().message()),
                  "resume", "make sure the controller answers (squeue), then run `dlsweep resume` again");
    for (auto& j : *found) {
      if (j.token.empty()) { ++unreadable; continue; }
      surviving.emplace(j.token, std::pair{j.native_id, j.state});
      if (j.ended) ended.insert(j.token);
    }
  }
  // The last job recorded for each (trial, attempt) on this backend.
  std::map<std::pair<std::int64_t, int>, std::string> recorded;
  for (const auto& j : jobs)
    if (j.backend == backend_.name()) recorded[{j.trial_id, j.attempt}] = j.job_id;

  // The whole curves of every trial's current attempt: what samplers and pruners see.
  auto points = storage_.metric_points(study_id_, spec_.objective.metric);
  if (!points) return std::unexpected(points.error());
  // Several objectives or constraints: the other reported metrics they read.
  std::map<std::string, std::map<std::int64_t, std::vector<db::Storage::MetricPoint>>> extra;
  for (const auto& m : extra_metrics(spec_)) {
    auto got = storage_.metric_points(study_id_, m);
    if (!got) return std::unexpected(got.error());
    extra[m] = std::move(*got);
  }
  std::map<std::int64_t, const db::TrialSummary*> by_id;
  for (const auto& s : summaries) by_id[s.trial_id] = &s;
  for (const auto& t : trials) {
    next_number_ = std::max(next_number_, t.number + 1);
    count_of(counts_, t.state)++;
    std::optional<double> value;
    // objective.rank_by: the best report, or the final one (the current attempt's last, as the engine's curve).
    if (auto it = by_id.find(t.id); it != by_id.end())
      value = spec_.objective.rank_final() ? it->second->value : it->second->best_value;
    history_index_[t.id] = history_.trials.size();
    search::TrialRecord rec{t.number, t.params, history_status(t.state), value, {}};
    if (auto c = points->find(t.id); c != points->end())
      for (const auto& p : c->second) rec.curve.push_back({double(p.step), p.epoch, double(p.samples), p.wall_s, p.value});
    if (spec_.multi_objective() || !spec_.constraints.empty()) {
      TrialFigures f;
      f.ranks = trial_ranks(spec_, t.params);
      if (auto it = by_id.find(t.id); it != by_id.end()) {
        const auto& sm = *it->second;
        if (sm.steps_to_target) f.steps_to_target = double(*sm.steps_to_target);
        if (sm.samples_to_target) f.samples_to_target = double(*sm.samples_to_target);
        f.time_to_target_s = sm.time_to_target_s;
        f.wall_s = sm.wall_s;
        if (sm.samples_per_s) f.add_metric("samples_per_s", *sm.samples_per_s);
      }
      for (const auto& p : rec.curve) f.add_metric(spec_.objective.metric, p.value);
      if (!rec.curve.empty()) {
        f.last_samples = rec.curve.back().samples;
        f.last_eval_wall_s = rec.curve.back().wall_s;
      }
      for (const auto& [name, points] : extra)
        if (auto c = points.find(t.id); c != points.end())
          for (const auto& p : c->second) f.add_metric(name, p.value);
      fill_objectives(rec, spec_, f);
    }
    history_.trials.push_back(std::move(rec));
    // Only COMPLETE, feasible trials can be the best.
    if (t.state == TrialState::complete) note_best(t.number, value, history_.trials.back().constraints);
    db::TrialRow row = t;
    if (options_.rerun.contains(t.state)) {
      // The user asked for it: same params, a new attempt, whatever the retry budget says.
      if (auto st = rotate_metrics(row.trial_dir, row.attempt); !st) return st;
      if (!apply(row, TrialEvent::rerun,
                 fmt::format("re-run on request (`dlsweep resume --rerun {}`)", t.state == TrialState::failed ? "failed" : "cancelled")))
        return fail("cannot re-run trial " + std::to_string(t.number), "resume");
      history_.trials.back().status = search::TrialStatus::running;
      history_.trials.back().curve.clear();
      waiting_.push_back(row);
      ++restored_.rerun;
      continue;
    }
    switch (t.state) {
      case TrialState::waiting: {
        // Its job may have been accepted just before the previous orchestrator could record
        // it (a trial is QUEUED only once the scheduler has its job): follow that job.
        const std::string token = fmt::format("{}/{}/{}", spec_.name, t.id, t.attempt);
        if (auto s = follow ? surviving.find(token) : surviving.end(); s != surviving.end()) {
          const auto [native, state_word] = s->second;
          surviving.erase(s);
          const bool over = ended.contains(token);
          if (apply(row, TrialEvent::launch, fmt::format("submitted to {} as {} (found on resume)", backend_.name(), native)) &&
              adopt(row, native, state_word, over)) {
            ++(over ? restored_.finished : restored_.adopted);
            break;
          }
          if (row.state == TrialState::queued &&
              !apply(row, TrialEvent::requeued, "requeued: its job found on resume cannot be followed"))
            return fail("cannot requeue trial " + std::to_string(t.number), "resume");
        }
        waiting_.push_back(row);
        break;
      }
      case TrialState::queued:
      case TrialState::running: {
        if (follow) {
          const std::string token = fmt::format("{}/{}/{}", spec_.name, t.id, t.attempt);
          std::string native, state_word = "not on the controller any more";
          const bool over = ended.contains(token);
          if (auto s = surviving.find(token); s != surviving.end()) {
            native = s->second.first;
            state_word = s->second.second;
            surviving.erase(s);
          } else if (auto r = recorded.find({t.id, t.attempt}); r != recorded.end()) {
            native = r->second;
          }
          // A job over already (COMPLETED, FAILED, ... still listed): adopted for its end, which
          // the scheduler reports; counted with the trials that finished unwatched.
          if (!native.empty() && adopt(row, native, state_word, over)) {
            ++(over ? restored_.finished : restored_.adopted);
            break;
          }
        }
        // Its attempt finished (the `final` record is on disk, or it pruned itself:
        // outcome.json) after the previous orchestrator last looked: record its end, never
        // run it again.
        if (has_final_record(row.trial_dir) || pruned_itself_on_disk(row)) {
          finish_from_disk(row);
          ++restored_.finished;
          break;
        }
        if (pbt_finished_on_disk(row)) {
          ++restored_.finished;
          break;
        }
        // Its job died with the previous orchestrator (the caller stopped any survivor),
        // or none is known: requeue the same attempt; the program resumes from its checkpoint.
        if (!apply(row, TrialEvent::requeued, "requeued: the orchestrator restarted while it was live"))
          return fail("cannot requeue trial " + std::to_string(t.number), "resume");
        waiting_.push_back(row);
        ++restored_.requeued;
        break;
      }
      case TrialState::failed:
        // A deterministic failure (failure_policy.hpp) would fail the same way again.
        if (row.attempt < spec_.trial.max_retries && row.message.find(kNotRetried) == std::string::npos) {
          if (auto st = rotate_metrics(row.trial_dir, row.attempt); !st) return st;
          if (apply(row, TrialEvent::retry, fmt::format("retry {} of {} (on resume)", row.attempt + 1,
                                                         spec_.trial.max_retries))) {
            // As a re-run: the sampler sees it pending, not failed (a branching study's next
            // wave is decided from how its branches ended, so it must wait for this one).
            history_.trials.back().status = search::TrialStatus::running;
            history_.trials.back().curve.clear();
            waiting_.push_back(row);
            ++restored_.retried;
          }
        }
        break;
      default:
        break;
    }
  }
  // Jobs of the study that no live trial owns (its trial ended, was cancelled, or moved on
  // to a newer attempt while the job lingered): nothing will read them, so they go.
  for (const auto& [token, job] : surviving) {
    auto owner = parse_token(token, spec_.name);
    if (!owner) { ++unreadable; continue; }
    if (ended.contains(token)) continue;  // over already (COMPLETED, ...): nothing to cancel
    sched::JobSpec spec;
    spec.study = spec_.name;
    spec.trial_id = owner->first;
    spec.attempt = owner->second;
    auto id = adopt_job(spec, job.first);
    if (!id) {
      progress_.event(fmt::format("warning: cannot cancel stray job {} (trial id {} attempt {}): {}", job.first,
                                  owner->first, owner->second, id.error().message()),
                      snapshot());
      continue;
    }
    cancel_job(*id);
    ++restored_.strays_cancelled;
    const auto n = number_of.find(owner->first);
    const std::string whose = n != number_of.end() ? fmt::format("trial {} attempt {}", n->second, owner->second)
                                                   : fmt::format("a trial no longer in the study, {}", token);
    progress_.event(fmt::format("cancelling job {} ({}, {}): it belongs to no live trial", job.first, whose, job.second),
                    snapshot());
  }
  if (unreadable > 0)
    progress_.event(fmt::format("warning: {} job(s) named for study {} whose trial could not be read back were left "
                                "alone (their submit index is gone); cancel them by hand if they are not yours",
                                unreadable, spec_.name),
                    snapshot());
  // The database holds the params; the first launch wrote params.json without syncing it
  // (prepare_trial_dir). Every trial about to be relaunched gets it again, durably.
  for (const auto& row : waiting_)
    if (auto st = restore_params_file(row.trial_dir, params_file(row.params)); !st) return st;
  flush();
  if (fatal_) return std::unexpected(*fatal_);
  return {};
}

bool Engine::adopt(const db::TrialRow& row, const std::string& native_id, const std::string& state_word, bool over) {
  Live& live = live_.add(row.id);
  live.row = row;
  live.adopted = true;
  // From the start of the file: ingestion is idempotent, and the trial's best value so far
  // is rebuilt on the way.
  live.tail = std::make_unique<JsonlTail>(metrics_file(row.trial_dir));
  watch_.add(row.id, row.trial_dir);
  auto id = adopt_job(build_job(spec_, options_.train_binary, row.id, row.number, row.attempt, row.trial_dir, row.params), native_id);
  if (!id) {
    progress_.event(fmt::format("trial {}: cannot follow job {}: {}; requeuing it", row.number, native_id,
                                id.error().message()),
                    snapshot());
    watch_.remove(row.id);
    retire_live(row.id);
    return false;
  }
  live.job_id = *id;
  // The previous orchestrator may have asked it to stop (pruned, cancelled) just before it
  // died: the stop it comes back with is that one, not a failure.
  take_previous_ask(live);
  progress_.event(over ? fmt::format("trial {}: its {} job {} ended while no orchestrator watched ({}): its end is "
                                     "taken from {}",
                                     row.number, backend_.name(), native_id, state_word, backend_.name())
                       : fmt::format("trial {}: following {} job {} ({}) left by the previous orchestrator", row.number,
                                     backend_.name(), native_id, state_word),
                  snapshot());
  return true;
}

void Engine::take_previous_ask(Live& live) {
  live.stop_reason = asked_stop(live.row.trial_dir);
  if (live.stop_reason == "pruned") live.prune_note = "pruned (asked by the previous orchestrator)";
}

void Engine::finish_from_disk(const db::TrialRow& row, const std::string& stop_reason) {
  Live& live = live_.add(row.id);
  live.row = row;
  live.tail = std::make_unique<JsonlTail>(metrics_file(row.trial_dir));
  take_previous_ask(live);
  if (!stop_reason.empty()) live.stop_reason = stop_reason;
  ingest(live, /*may_prune=*/false);
  sched::JobEvent ev = sched::job_event(fmt::format("finished-unwatched-{}-{}", row.id, row.attempt), row.id,
                                        row.attempt, sched::JobEventKind::exited, {}, {}, protocol::kExitDone);
  const bool final_on_disk = stop_reason.empty() && has_final_record(row.trial_dir);
  progress_.event(final_on_disk
                      ? fmt::format("trial {}: its final record is on disk: it finished while no orchestrator "
                                    "watched; recorded, not run again",
                                    row.number)
                  : stop_reason.empty()
                      ? fmt::format("trial {}: its {} says it pruned itself: it ended while no orchestrator "
                                    "watched; recorded, not run again",
                                    row.number, protocol::kOutcomeFile)
                      : fmt::format("trial {}: its records on disk reach its interval's end: it stopped there while "
                                    "no orchestrator watched; recorded, not run again",
                                    row.number),
                  snapshot());
  on_terminal(live, ev);
}

void Engine::requeue_adopted(Live& live, const std::string& why) {
  db::TrialRow row = live.row;
  watch_.remove(row.id);
  retire_live(row.id);
  if (apply(row, TrialEvent::requeued, "requeued: the job left by the previous orchestrator cannot be followed (" +
                                           why + ")")) {
    if (auto st = restore_params_file(row.trial_dir, params_file(row.params)); !st) fatal(st.error());
    waiting_.push_back(row);
    progress_.event(fmt::format("trial {} requeued: its earlier job cannot be followed ({})", row.number, why),
                    snapshot());
  }
  boost::asio::post(io_, [this] { fill(); check_done(); });
}

}  // namespace dlsweep::orch
