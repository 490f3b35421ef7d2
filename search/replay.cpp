// replay.cpp — recorded curves judged report by report by a real pruner (replay.hpp).
#include "search/replay.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

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

namespace {

void start_outcome(ReplayOutcome& out, const ReplayInput& settings, const Pruner& pruner) {
  out.pruner = pruner.name();
  out.pruner_axis = pruner.axis();
  out.compute = settings.compute;
}

/// What became of recorded trial `t` with `kept` of its reports, stopped there by the
/// replayed pruner (`stop`) or not; `self`, its record in the history, takes that outcome.
ReplayedTrial settle(const RecordedTrial& t, std::size_t kept, const PruneDecision* stop, Axis pruner_axis,
                     Axis compute, TrialRecord& self, bool maximize, bool rank_final) {
  ReplayedTrial r;
  r.number = t.number;
  r.recorded = t.status;
  r.reports_recorded = t.curve.size();
  r.compute_recorded = compute_of(t.curve, t.curve.size(), compute);
  if (t.status == TrialStatus::complete) r.recorded_value = curve_value(t.curve, t.curve.size(), maximize, rank_final);
  self.curve.assign(t.curve.begin(), t.curve.begin() + static_cast<std::ptrdiff_t>(kept));
  if (stop) {
    r.replayed = TrialStatus::pruned;
    r.at = stop->at;
    r.reason = stop->reason;
  } else if (t.status == TrialStatus::pruned) {
    // Kept past where the recorded sweep stopped it: what it would have reported next is
    // not in the record. Counted as it stands; for later judgements it stopped there.
    r.unknown = true;
    r.replayed = TrialStatus::pruned;
    if (!t.curve.empty()) r.at = position(t.curve.back(), pruner_axis);
  } else {
    r.replayed = t.status;
  }
  self.status = r.replayed;
  self.value = curve_value(self.curve, kept, maximize, rank_final);
  r.reports_kept = kept;
  r.compute_replayed = compute_of(t.curve, kept, compute);
  if (r.replayed == TrialStatus::complete) r.value = self.value;
  return r;
}

/// Adds `r` to the outcome: its counts and its trials.
void count(ReplayOutcome& out, ReplayedTrial r) {
  const bool stopped = r.replayed == TrialStatus::pruned && !r.unknown;
  if (r.recorded == TrialStatus::pruned) ++out.pruned_recorded;
  if (stopped) ++out.pruned_replayed;
  if (r.unknown) ++out.unknown;
  if (stopped != (r.recorded == TrialStatus::pruned)) ++out.differ;
  out.compute_recorded += r.compute_recorded;
  out.compute_replayed += r.compute_replayed;
  out.trials.push_back(std::move(r));
}

/// The best recorded and replayed trials; compute_to_best from `to_end` (each trial's moment
/// of ending, as the replay's compute by then) or, without it, the trials up to the best.
void settle_best(ReplayOutcome& o, bool maximize, const std::vector<double>* to_end) {
  if (auto b = best_index(o.trials, maximize, [](const ReplayedTrial& t) { return t.recorded_value; })) {
    o.best_recorded = o.trials[*b].number;
    o.best_recorded_value = o.trials[*b].recorded_value;
  }
  if (auto b = best_index(o.trials, maximize, [](const ReplayedTrial& t) { return t.value; })) {
    o.best_replayed = o.trials[*b].number;
    o.best_replayed_value = o.trials[*b].value;
    if (to_end) {
      o.compute_to_best = (*to_end)[*b];
    } else {
      for (std::size_t i = 0; i <= *b; ++i) o.compute_to_best += o.trials[i].compute_replayed;
    }
  }
}

/// The recorded order: every report and every end, by its recorded moment. A trial's own
/// moments are made non-decreasing (its reports in order, its end after them); at the same
/// moment the earlier-started trial (the input's order) comes first, a trial's end after its
/// reports.
struct Step {
  double at = 0;
  std::size_t trial = 0;
  std::size_t report = 0;  ///< == the curve's size: the trial's end
};

std::vector<Step> recorded_steps(const std::vector<RecordedTrial>& trials) {
  std::vector<Step> steps;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    double last = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < t.curve.size(); ++k) {
      if (k < t.report_at.size()) last = std::max(last, t.report_at[k]);
      steps.push_back({last, i, k});
    }
    if (t.end_at) last = std::max(last, *t.end_at);
    steps.push_back({last, i, t.curve.size()});
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return std::tie(a.at, a.trial, a.report) < std::tie(b.at, b.trial, b.report);
  });
  return steps;
}

ReplayOutcome replay_interleaved(const ReplayInput& in, const Pruner& pruner) {
  ReplayOutcome out;
  start_outcome(out, in, pruner);
  out.interleaved = true;
  History h;
  h.maximize = in.maximize;
  h.rank_final = in.rank_final;
  const std::size_t n = in.trials.size();
  std::vector<std::optional<std::size_t>> slot(n);   // the trial's index in h.trials, once it reported or ended
  std::vector<std::optional<ReplayedTrial>> done(n);  // stopped by the replay, or ended
  std::vector<double> compute_now(n, 0.0), to_end(n, 0.0);
  for (const Step& s : recorded_steps(in.trials)) {
    const RecordedTrial& t = in.trials[s.trial];
    if (done[s.trial]) continue;  // stopped by the replay: no later report; its end is in already
    if (!slot[s.trial]) {
      // In the engine's history from its creation (running, no curve yet: no pruner counts it).
      slot[s.trial] = h.trials.size();
      h.trials.push_back(TrialRecord{t.number, t.params, TrialStatus::running, std::nullopt, {}, {}, {}});
    }
    TrialRecord& self = h.trials[*slot[s.trial]];
    if (s.report < t.curve.size()) {
      // A report: the trial's curve up to it is in the history (running trials count too:
      // asha compares with them), and the trial is judged as it stands.
      self.curve.assign(t.curve.begin(), t.curve.begin() + static_cast<std::ptrdiff_t>(s.report + 1));
      compute_now[s.trial] = position(t.curve[s.report], in.compute);
      const TrialRecord upto{t.number, t.params, TrialStatus::running, std::nullopt, self.curve, {}, {}};
      const auto d = pruner.judge(upto, h);
      if (d.prune)
        done[s.trial] = settle(t, s.report + 1, &d, pruner.axis(), in.compute, self, in.maximize, in.rank_final);
      continue;
    }
    // Its end, at its recorded moment: the whole trial, with its recorded status (or unknown beyond).
    done[s.trial] = settle(t, t.curve.size(), nullptr, pruner.axis(), in.compute, self, in.maximize, in.rank_final);
    compute_now[s.trial] = done[s.trial]->compute_replayed;
    for (double c : compute_now) to_end[s.trial] += c;
  }
  for (auto& r : done) count(out, std::move(*r));
  settle_best(out, in.maximize, &to_end);
  return out;
}

}  // namespace

bool has_recorded_order(const std::vector<RecordedTrial>& trials) {
  return std::all_of(trials.begin(), trials.end(), [](const RecordedTrial& t) {
    return t.end_at && t.report_at.size() == t.curve.size();
  });
}

Replayer::Replayer(const ReplayInput& settings, const Pruner& pruner) : pruner_(pruner), compute_(settings.compute) {
  start_outcome(out_, settings, pruner);
  history_.maximize = settings.maximize;
  history_.rank_final = settings.rank_final;
}

const ReplayedTrial& Replayer::add(const RecordedTrial& t, std::int64_t number) {
  // The trial is in the history while it runs (the engine's history holds live trials'
  // curves too: asha compares with them), and judged after each of its reports.
  history_.trials.push_back(TrialRecord{number, t.params, TrialStatus::running, std::nullopt, {}, {}, {}});
  std::size_t kept = t.curve.size();
  std::optional<PruneDecision> stop;
  for (std::size_t n = 1; n <= t.curve.size(); ++n) {
    TrialRecord upto{number, t.params, TrialStatus::running, std::nullopt,
                     std::vector<CurvePoint>(t.curve.begin(), t.curve.begin() + static_cast<std::ptrdiff_t>(n)), {}, {}};
    history_.trials.back().curve = upto.curve;
    auto d = pruner_.judge(upto, history_);
    if (!d.prune) continue;
    kept = n;
    stop = std::move(d);
    break;
  }
  count(out_, settle(t, kept, stop ? &*stop : nullptr, pruner_.axis(), compute_, history_.trials.back(),
                     history_.maximize, history_.rank_final));
  return out_.trials.back();
}

ReplayOutcome Replayer::finish() const {
  ReplayOutcome o = out_;
  settle_best(o, history_.maximize, nullptr);
  return o;
}

ReplayOutcome replay(const ReplayInput& in, const Pruner& pruner) {
  if (in.interleaved && has_recorded_order(in.trials)) return replay_interleaved(in, pruner);
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
