// replay.cpp — recorded curves judged report by report by a real pruner (replay.hpp).
#include "search/replay.hpp"

#include <cmath>

#include <fmt/format.h>

namespace dlsweep::search {

std::optional<double> curve_value(const std::vector<CurvePoint>& curve, std::size_t n, bool maximize, bool rank_final) {
  std::optional<double> v;
  for (std::size_t i = 0; i < n && i < curve.size(); ++i) {
    const double x = curve[i].value;
    if (std::isnan(x)) continue;
    if (rank_final || !v || (maximize ? x > *v : x < *v)) v = x;
  }
  return v;
}

namespace {

double compute_of(const std::vector<CurvePoint>& curve, std::size_t n, Axis axis) {
  return n == 0 || curve.empty() ? 0.0 : position(curve[std::min(n, curve.size()) - 1], axis);
}

/// The best COMPLETE trial of `trials` by `value_of` (ties: the earlier one).
template <class ValueOf>
std::optional<std::size_t> best_index(const std::vector<ReplayedTrial>& trials, bool maximize, ValueOf value_of) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto v = value_of(trials[i]);
    if (!v) continue;
    const auto b = best ? value_of(trials[*best]) : std::nullopt;
    if (!best || (maximize ? *v > *b : *v < *b)) best = i;
  }
  return best;
}

}  // namespace

Replayer::Replayer(const ReplayInput& settings, const Pruner& pruner) : pruner_(pruner), compute_(settings.compute) {
  out_.pruner = pruner.name();
  out_.pruner_axis = pruner.axis();
  out_.compute = settings.compute;
  history_.maximize = settings.maximize;
  history_.rank_final = settings.rank_final;
}

const ReplayedTrial& Replayer::add(const RecordedTrial& t, std::int64_t number) {
  const bool maximize = history_.maximize, rank_final = history_.rank_final;
  ReplayedTrial r;
  r.number = t.number;
  r.recorded = t.status;
  r.reports_recorded = t.curve.size();
  r.compute_recorded = compute_of(t.curve, t.curve.size(), compute_);
  if (t.status == TrialStatus::complete) r.recorded_value = curve_value(t.curve, t.curve.size(), maximize, rank_final);
  if (t.status == TrialStatus::pruned) ++out_.pruned_recorded;

  // The trial is in the history while it runs (the engine's history holds live trials'
  // curves too: asha compares with them), and judged after each of its reports.
  history_.trials.push_back(TrialRecord{number, t.params, TrialStatus::running, std::nullopt, {}, {}, {}});
  std::size_t kept = t.curve.size();
  bool stopped = false;
  for (std::size_t n = 1; n <= t.curve.size(); ++n) {
    TrialRecord upto{number, t.params, TrialStatus::running, std::nullopt,
                     std::vector<CurvePoint>(t.curve.begin(), t.curve.begin() + static_cast<std::ptrdiff_t>(n)), {}, {}};
    history_.trials.back().curve = upto.curve;
    const auto d = pruner_.judge(upto, history_);
    if (!d.prune) continue;
    kept = n;
    stopped = true;
    r.at = d.at;
    r.reason = d.reason;
    break;
  }
  auto& self = history_.trials.back();
  self.curve.assign(t.curve.begin(), t.curve.begin() + static_cast<std::ptrdiff_t>(kept));
  if (stopped) {
    r.replayed = TrialStatus::pruned;
  } else if (t.status == TrialStatus::pruned) {
    // Kept past where the recorded sweep stopped it: what it would have reported next is
    // not in the record. Counted as it stands; for later judgements it stopped there.
    r.unknown = true;
    r.replayed = TrialStatus::pruned;
    if (!t.curve.empty()) r.at = position(t.curve.back(), pruner_.axis());
  } else {
    r.replayed = t.status;
  }
  self.status = r.replayed;
  self.value = curve_value(self.curve, kept, maximize, rank_final);
  r.reports_kept = kept;
  r.compute_replayed = compute_of(t.curve, kept, compute_);
  if (r.replayed == TrialStatus::complete) r.value = self.value;
  if (stopped) ++out_.pruned_replayed;
  if (r.unknown) ++out_.unknown;
  if (stopped != (t.status == TrialStatus::pruned)) ++out_.differ;
  out_.compute_recorded += r.compute_recorded;
  out_.compute_replayed += r.compute_replayed;
  out_.trials.push_back(std::move(r));
  return out_.trials.back();
}

ReplayOutcome Replayer::finish() const {
  ReplayOutcome o = out_;
  const bool maximize = history_.maximize;
  if (auto b = best_index(o.trials, maximize, [](const ReplayedTrial& t) { return t.recorded_value; })) {
    o.best_recorded = o.trials[*b].number;
    o.best_recorded_value = o.trials[*b].recorded_value;
  }
  if (auto b = best_index(o.trials, maximize, [](const ReplayedTrial& t) { return t.value; })) {
    o.best_replayed = o.trials[*b].number;
    o.best_replayed_value = o.trials[*b].value;
    for (std::size_t i = 0; i <= *b; ++i) o.compute_to_best += o.trials[i].compute_replayed;
  }
  return o;
}

ReplayOutcome replay(const ReplayInput& in, const Pruner& pruner) {
  Replayer r(in, pruner);
  for (const auto& t : in.trials) r.add(t, t.number);
  return r.finish();
}

namespace {

std::string percent(double part, double whole) {
  if (whole <= 0) return "?%";
  const double p = 100.0 * part / whole;
  return p > 0 && p < 1 ? fmt::format("{:.1f}%", p) : fmt::format("{:.0f}%", p);
}

}  // namespace

std::string summary_line(const ReplayOutcome& o, const std::string& metric) {
  std::string s;
  const std::string pct = percent(o.compute_replayed, o.compute_recorded);
  if (!o.best_replayed) {
    s = fmt::format("{}: no trial would complete; {} of the compute", o.pruner, pct);
  } else if (o.same_best()) {
    s = fmt::format("{}: the same best (trial {}, {} {:.6g}) at {} of the compute", o.pruner, *o.best_replayed, metric,
                    *o.best_replayed_value, pct);
  } else if (o.best_recorded) {
    const double diff = *o.best_replayed_value - *o.best_recorded_value;
    s = fmt::format("{}: best would be trial {} ({} {:.6g}, {:.4g} {} the recorded best, trial {}) at {} of the compute",
                    o.pruner, *o.best_replayed, metric, *o.best_replayed_value, std::abs(diff),
                    diff < 0 ? "below" : "above", *o.best_recorded, pct);
  } else {
    s = fmt::format("{}: best would be trial {} ({} {:.6g}; the recorded sweep completed none) at {} of the compute",
                    o.pruner, *o.best_replayed, metric, *o.best_replayed_value, pct);
  }
  s += fmt::format("; pruned {} of {}", o.pruned_replayed, o.trials.size());
  if (o.unknown)
    s += fmt::format("; {} unknown beyond where the recorded sweep stopped {}", o.unknown,
                     o.unknown == 1 ? "it" : "them");
  return s;
}

}  // namespace dlsweep::search
