// replay_load.cpp — a study's finished trials read for search/replay (replay_load.hpp).
#include "orchestrator/replay_load.hpp"

#include <algorithm>
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

  // (start, number) orders the replay: the recorded start, else the trial's number.
  std::vector<std::tuple<double, std::int64_t, search::RecordedTrial>> finished;
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
    finished.emplace_back(start, t.number, std::move(r));
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
  for (auto& f : finished) out.input.trials.push_back(std::move(std::get<2>(f)));
  out.max_concurrent = max_overlap(spans);

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
