// engine_pbt.cpp — the engine's side of population-based training (search/pbt_sampler.hpp,
// engine/pbt_lineage.hpp). A member's next interval is a new trial: when the sampler has
// decided it, the engine records its link (a `pbt` event in the trial's transaction), adds
// dlsweep-train's schedule params, copies its parent's checkpoints/ into the new trial
// directory before any job exists, tells the job where its interval ends (DLSWEEP_STOP_AT),
// and, for programs that only read control.json, asks the trial to stop once its reported
// position reaches that end (kStopIntervalEnd: it ends COMPLETE).
#include <fmt/format.h>

#include <algorithm>

#include "common/jsonl_tail.hpp"
#include "common/protocol.hpp"

#include "engine/engine.hpp"
#include "engine/trial_files.hpp"
#include "engine/trial_outcome.hpp"

namespace dlsweep::orch {

namespace fs = std::filesystem;

namespace {

std::int64_t generations_of(const StudySpec& spec) {
  const auto& g = spec.search.options;
  auto it = g.find("generations");
  return it != g.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

}  // namespace

// A branching study (search/branch_sampler.hpp) forks its trials from checkpoints as pbt does:
// the same links, checkpoint copies, DLSWEEP_STOP_AT and stops serve it.
bool Engine::pbt() const { return sampler_ && (sampler_->name() == "pbt" || sampler_->name() == "branch"); }

bool Engine::pbt_ready() {
  // A branching study decides each new trial from the plan it re-derives from the history: if
  // that plan is not the one its trials ran under, a new trial would duplicate or skip a cell.
  if (sampler_->name() == "branch" && !branch_plan_checked_) {
    branch_plan_checked_ = true;
    if (auto bad = branch_plan_mismatch()) {
      progress_.event(*bad, snapshot());
      exhausted_ = true;
      return false;
    }
  }
  if (sampler_->ready(next_number_, history_)) return true;
  if (sampler_->name() == "branch") {
    if (pbt_waiting_for_ != next_number_) {
      pbt_waiting_for_ = next_number_;
      progress_.event(fmt::format("branch: trial {} waits for the trunk segment it starts from, or for the branches "
                                  "that decide it",
                                  next_number_),
                      snapshot());
    }
    if (live_.empty() && waiting_.empty()) {
      progress_.event(fmt::format("branch: trial {} cannot start: what it waits for will not finish", next_number_), snapshot());
      exhausted_ = true;
    }
    return false;
  }
  const std::int64_t p = spec_.search.options.value("population", std::int64_t{1});
  const std::int64_t g = p > 0 ? next_number_ / p : 0;
  if (pbt_waiting_for_ != g) {
    pbt_waiting_for_ = g;
    progress_.event(fmt::format("pbt: generation {} waits for every trial of generation {} to finish", g, g - 1),
                    snapshot());
  }
  // Nothing left that could finish it (a trial of the previous generation is gone): stop
  // rather than wait for ever.
  if (live_.empty() && waiting_.empty()) {
    progress_.event(fmt::format("pbt: generation {} cannot start: generation {} will not finish", g, g - 1), snapshot());
    exhausted_ = true;
  }
  return false;
}

Status Engine::pbt_prepare(std::int64_t number, search::Params& params) {
  if (!pbt()) return {};
  auto link = PbtLink::from_json(number, sampler_->lineage(number, history_));
  if (!link) return {};
  const fs::path dir = trial_dir_for(options_.runs_dir, spec_.name, number);
  if (spec_.trial.embedded) {
    std::map<std::int64_t, nlohmann::json> params_of;
    for (const auto& t : history_.trials) params_of[t.number] = t.params;
    std::vector<std::string> searched;
    for (const auto& d : spec_.space.dims) searched.push_back(d.name);
    if (sampler_->name() == "branch") searched = {"batch_size", "base_lr"};  // the branch sampler sets both
    pbt_links_[number] = *link;
    params = pbt_trainer_params(params, pbt_chain(pbt_links_, number), params_of, searched, generations_of(spec_));
  }
  pbt_links_[number] = *link;
  if (link->parent) {
    const fs::path from = trial_dir_for(options_.runs_dir, spec_.name, *link->parent);
    auto copied = copy_checkpoints(from, dir);
    if (!copied) return std::unexpected(copied.error());
    if (*copied == 0)
    {
      if (sampler_->name() == "branch")  // a branch from scratch would measure nothing: refuse
        return std::unexpected(Error{fmt::format("trial {}: the trunk segment it branches from, trial {}, left no checkpoint in {}",
                                                 number, *link->parent, (from / protocol::kCheckpointDir).string()),
                                     (from / protocol::kCheckpointDir).string(),
                                     "the trial program must write checkpoints there and resume from them (the trial protocol): "
                                     "dlsweep-train does; see docs/branching.md"});
      progress_.event(fmt::format("pbt: trial {}: its parent, trial {}, left no checkpoint; it starts from scratch",
                                  number, *link->parent),
                      snapshot());
    }
  }
  return {};
}

void Engine::pbt_record(std::int64_t trial_id, std::int64_t number) {
  auto it = pbt_links_.find(number);
  if (it == pbt_links_.end()) return;
  db::EventRow e;
  e.study_id = study_id_;
  e.trial_id = trial_id;
  e.who = "orchestrator";
  e.kind = kPbtEventKind;
  e.reason = it->second.to_json().dump();
  if (auto st = db().note_event(e); !st) fatal(st.error());
  progress_.event(fmt::format("trial {}: pbt {}", number, it->second.describe()), snapshot());
}

void Engine::pbt_env(std::int64_t number, sched::JobSpec& job) const {
  auto it = pbt_links_.find(number);
  if (it == pbt_links_.end()) return;
  if (auto stop = pbt_stop_at(it->second, spec_.trial.embedded, generations_of(spec_))) job.env[kEnvStopAt] = *stop;
}

bool Engine::pbt_stop_at_end(Live& live) {
  auto it = pbt_links_.find(live.row.number);
  if (it == pbt_links_.end() || live.curve.points.empty() || !live.stop_reason.empty() || interrupted_ || done_)
    return false;
  if (!pbt_stop_at(it->second, spec_.trial.embedded, generations_of(spec_))) return false;
  const auto axis = search::parse_axis(it->second.axis).value_or(search::Axis::epoch);
  const double at = search::position(live.curve.points.back(), axis);
  if (at < it->second.end) return false;
  live.stop_reason = kStopIntervalEnd;
  if (auto st = request_stop(live.row.trial_dir, kStopIntervalEnd); !st) {
    progress_.event(fmt::format("warning: trial {}: cannot ask it to stop: {}", live.row.number, st.error().message()),
                    snapshot());
    return true;
  }
  progress_.event(fmt::format("trial {} reached its interval's end ({} {:g}); asked to stop (pbt)", live.row.number,
                              it->second.axis, at),
                  snapshot());
  return true;
}

nlohmann::json Engine::params_file(const nlohmann::json& params) const {
  return pbt() && spec_.trial.embedded ? pbt_params_file(params) : params;
}

bool Engine::pbt_finished_on_disk(const db::TrialRow& row) {
  if (!pbt()) return false;
  auto it = pbt_links_.find(row.number);
  if (it == pbt_links_.end() || !pbt_stop_at(it->second, spec_.trial.embedded, generations_of(spec_))) return false;
  const auto axis = search::parse_axis(it->second.axis).value_or(search::Axis::epoch);
  JsonlTail tail(metrics_file(row.trial_dir));
  auto lines = tail.read_all_lines();
  if (!lines) return false;
  double at = -1;
  for (const auto& l : *lines)
    if (auto r = protocol::parse_record(l); r && r->kind == protocol::RecordKind::eval)
      at = std::max(at, search::position({double(r->step), r->epoch, double(r->samples), r->wall_s, 0.0}, axis));
  if (at < it->second.end) return false;
  finish_from_disk(row, kStopIntervalEnd);
  return true;
}

std::optional<std::string> Engine::branch_plan_mismatch() const {
  for (const auto& [n, stored] : pbt_links_) {
    if (n >= next_number_) continue;
    auto derived = PbtLink::from_json(n, sampler_->lineage(n, history_));
    if (!derived) continue;  // not decidable now (a trial it rests on runs again): nothing to compare
    if (derived->to_json() != stored.to_json())
      return fmt::format("branch: the plan this dlsweep derives differs from the trials the study ran (trial {} ran as "
                         "{}; the plan has {}): the study was made by a dlsweep that planned otherwise, so no new "
                         "trial starts. Its answer stands (`dlsweep best {}`); to measure further, submit the study "
                         "again under a new name",
                         n, stored.describe(), derived->describe(), spec_.name);
  }
  return std::nullopt;
}

Status Engine::pbt_restore() {
  if (!pbt()) return {};
  auto events = storage_.events(study_id_);
  if (!events) return std::unexpected(events.error());
  auto trials = storage_.list_trials(study_id_);
  if (!trials) return std::unexpected(trials.error());
  std::map<std::int64_t, std::int64_t> number_of;
  for (const auto& t : *trials) number_of[t.id] = t.number;
  for (const auto& e : *events) {
    if (e.kind != kPbtEventKind || !e.trial_id) continue;
    auto n = number_of.find(*e.trial_id);
    if (n == number_of.end()) continue;
    auto j = nlohmann::json::parse(e.reason, nullptr, /*allow_exceptions=*/false);
    if (auto link = PbtLink::from_json(n->second, j)) pbt_links_[n->second] = *link;
  }
  return {};
}

}  // namespace dlsweep::orch
