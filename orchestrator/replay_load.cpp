// replay_load.cpp — a study's finished trials read for search/replay (replay_load.hpp).
#include "orchestrator/replay_load.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/stored_study.hpp"

namespace dlsweep::orch {

namespace {

/// The most intervals [start, end] that overlap at one moment.
std::size_t max_overlap(const std::vector<std::pair<double, double>>& spans) {
  std::vector<std::pair<double, int>> edges;
  for (const auto& [s, e] : spans) {
    edges.emplace_back(s, +1);
    edges.emplace_back(e, -1);
  }
  std::sort(edges.begin(), edges.end());  // at the same moment an end (-1) comes before a start
  std::size_t now = 0, most = 0;
  for (const auto& [_, d] : edges) {
    now = d > 0 ? now + 1 : (now > 0 ? now - 1 : 0);
    most = std::max(most, now);
  }
  return std::max<std::size_t>(most, 1);
}

/// The moments of a trial's run on the engine's clock (events.at, unix seconds).
struct Run {
  std::optional<double> start;  ///< its current attempt's transition to RUNNING
  std::optional<double> end;    ///< its transition into the final state it is in
};

// The recorded order of reports and trial ends (search/replay's interleaved replay).
//
// What the engine's pruner saw at a report is the study's History as the engine kept it
// then: each report is judged the moment the engine reads it (Engine::ingest_batch ->
// maybe_prune, engine/engine_events.cpp), against every other trial's curve up to its latest
// report read before, and a trial's end enters the History (value, whole curve, status) when
// the engine handles the job's end (on_terminal -> finish_trial). So the order needed is the
// engine's order of report readings and trial ends. The database keeps:
//  - a trial's end exactly: its transition into its final state is an event written as the
//    engine handled the end (events.at, the engine's clock; db/trials.cpp Storage::transition);
//  - no moment of reading a report: records and metrics are WITHOUT ROWID tables keyed by
//    (trial, attempt, seq), with neither a rowid nor a time of storing. The most exact source
//    left is the report's own wall_s: the program's clock since it started (the trial
//    library's default: time since its import), so a report was written at its trial's
//    RUNNING transition plus its wall_s, and read by the engine at once (inotify). That
//    misses the program's start-up (interpreter, imports: tens of milliseconds), so a report
//    and another trial's end closer than that may be taken in the wrong order.
// (Reports the engine reads only as the job ends are stored but never judged — on_terminal
// ingests with may_prune false; the replay judges them. A program that waits in
// should_stop() after each report, as the trial library's loop does, has none.)
// A program that reports its own wall_s (simulated time, or a retry continuing an earlier
// attempt's clock) gives no order: a report beyond its trial's recorded run says so, and the
// replay goes one after another.
constexpr double kWallSlackS = 1.0;  ///< a report's wall_s may exceed its recorded run by this (clock steps)

/// Fills `trials`' report_at and end_at from their runs; "" when done, else why not.
std::string fill_order(std::vector<search::RecordedTrial>& trials, const std::vector<Run>& runs) {
  for (std::size_t i = 0; i < trials.size(); ++i) {
    auto& t = trials[i];
    const Run& run = runs[i];
    if (!run.start || !run.end)
      return fmt::format("trial {} has no recorded {}", t.number, run.start ? "end" : "start");
    const double span = *run.end - *run.start;
    double last = 0;
    for (const auto& p : t.curve) {
      if (!std::isfinite(p.wall_s) || p.wall_s < last - 1e-9 || p.wall_s < 0)
        return fmt::format("trial {}'s reports' wall_s is not its clock (it goes back)", t.number);
      last = p.wall_s;
    }
    if (!t.curve.empty() && last <= 0) return fmt::format("trial {} reports no wall_s", t.number);
    if (last > span + kWallSlackS)
      return fmt::format("trial {}'s reports' wall_s (up to {:g} s) is beyond its recorded run ({:.3g} s): its start "
                         "was recorded late (a batch scheduler's poll) or wall_s is not the program's clock",
                         t.number, last, span);
  }
  for (std::size_t i = 0; i < trials.size(); ++i) {
    auto& t = trials[i];
    t.report_at.clear();
    for (const auto& p : t.curve) t.report_at.push_back(std::min(*runs[i].start + p.wall_s, *runs[i].end));
    t.end_at = runs[i].end;
  }
  return "";
}

}  // namespace

Result<ReplayStudy> load_replay_study(const db::Storage& storage, const db::StudyRow& study, const std::string& compute) {
  ReplayStudy out;
  auto stored = read_stored_study(study.spec_json, study.name);
  if (!stored) return std::unexpected(stored.error());
  if (stored->objectives.size() > 1)
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}' has {} objectives; replay compares trials by one objective", study.name,
                               stored->objectives.size()),
                   "replay", "replay a study with a single objective");
  out.metric = study.objective_metric;
  out.algorithm = stored->algorithm;
  out.input.maximize = study.objective_mode == "max";
  out.input.rank_final = stored->rank_final();
  const auto spec = nlohmann::json::parse(study.spec_json, nullptr, /*allow_exceptions=*/false);
  out.recorded_pruner = spec.is_object() && spec.contains("pruner") && spec["pruner"].is_object()
                            ? spec["pruner"]
                            : nlohmann::json{{"kind", "none"}};

  auto trials = storage.list_trials(study.id);
  if (!trials) return std::unexpected(trials.error());
  auto points = storage.metric_points(study.id, study.objective_metric);
  if (!points) return std::unexpected(points.error());
  auto times = storage.trial_times(study.id);
  if (!times) return std::unexpected(times.error());
  auto events = storage.events(study.id);
  if (!events) return std::unexpected(events.error());
  std::map<std::int64_t, const db::TrialRow*> by_id;
  for (const auto& t : *trials) by_id[t.id] = &t;
  std::map<std::int64_t, Run> runs;  // trial id -> its current attempt's run
  for (const auto& e : *events) {
    if (e.kind != "transition" || !e.trial_id) continue;
    auto t = by_id.find(*e.trial_id);
    if (t == by_id.end()) continue;
    Run& run = runs[*e.trial_id];
    if (e.to_state == "RUNNING" && e.attempt == t->second->attempt && !run.start) run.start = e.at;
    if (e.to_state == std::string(to_string(t->second->state))) run.end = e.at;  // the last one (events by id)
  }

  // (start, number) orders the replay: the recorded start, else the trial's number.
  std::vector<std::tuple<double, std::int64_t, search::RecordedTrial, Run>> finished;
  std::vector<std::pair<double, double>> spans;
  for (const auto& t : *trials) {
    search::RecordedTrial r;
    r.number = t.number;
    r.params = t.params;
    if (t.state == TrialState::complete) r.status = search::TrialStatus::complete;
    else if (t.state == TrialState::pruned) r.status = search::TrialStatus::pruned;
    else if (t.state == TrialState::failed) r.status = search::TrialStatus::failed;
    else { ++out.left_out; continue; }
    if (auto c = points->find(t.id); c != points->end())
      for (const auto& p : c->second)
        r.curve.push_back({double(p.step), p.epoch, double(p.samples), p.wall_s, p.value});
    double start = double(t.number);
    if (auto tt = times->find(t.id); tt != times->end() && tt->second.started_at) {
      start = *tt->second.started_at;
      if (tt->second.ended_at) spans.emplace_back(*tt->second.started_at, *tt->second.ended_at);
    }
    finished.emplace_back(start, t.number, std::move(r), runs[t.id]);
  }
  const bool any_complete = std::any_of(finished.begin(), finished.end(), [](const auto& f) {
    return std::get<2>(f).status == search::TrialStatus::complete && !std::get<2>(f).curve.empty();
  });
  if (!any_complete)
    return fail_as(ErrorKind::bad_input,
                   fmt::format("study '{}' has no COMPLETE trial that reported {} ({} finished, {} not finished)",
                               study.name, study.objective_metric, finished.size(), out.left_out),
                   "replay",
                   "let the sweep finish first (`dlsweep resume " + study.name + "`), or check `dlsweep status " +
                       study.name + "`");
  std::sort(finished.begin(), finished.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::vector<Run> ordered_runs;
  for (auto& f : finished) {
    out.input.trials.push_back(std::move(std::get<2>(f)));
    ordered_runs.push_back(std::get<3>(f));
  }
  out.max_concurrent = max_overlap(spans);
  // In the recorded order where the record gives it; one trial at a time, that order is the
  // start order, and one after another is the same replay.
  out.order_why = fill_order(out.input.trials, ordered_runs);
  out.ordered = out.order_why.empty();
  out.input.interleaved = out.ordered && out.max_concurrent > 1;

  // The compute axis: a trial's compute is its last kept report's position on it.
  auto every = [&](search::Axis a) {
    return std::all_of(out.input.trials.begin(), out.input.trials.end(), [&](const search::RecordedTrial& t) {
      return t.curve.empty() || search::position(t.curve.back(), a) > 0;
    });
  };
  if (compute == "auto") {
    for (auto a : {search::Axis::wall_s, search::Axis::samples, search::Axis::step, search::Axis::epoch}) {
      if (!every(a)) continue;
      out.input.compute = a;
      out.compute_why = fmt::format("{}: every trial reports it", search::axis_name(a));
      return out;
    }
    return fail_as(ErrorKind::bad_input, "the trials report no wall_s, samples, step or epoch above 0", "replay",
                   "report wall_s, samples or step with the objective (docs/protocol.md)");
  }
  auto axis = search::parse_axis(compute);
  if (!axis)
    return fail_as(ErrorKind::bad_input, fmt::format("--compute {}: expected auto, wall_s, samples, step or epoch", compute),
                   "replay", "write --compute wall_s (or samples, step, epoch, auto)");
  if (!every(*axis))
    return fail_as(ErrorKind::bad_input,
                   fmt::format("--compute {}: some trials report no {} above 0", compute, compute), "replay",
                   "leave --compute out (auto) or choose an axis every trial reports");
  out.input.compute = *axis;
  out.compute_why = fmt::format("{}: as asked", compute);
  return out;
}

}  // namespace dlsweep::orch
