// replay_sampler.cpp — a sampler's proposals looked up on a recorded grid and replayed
// (replay_sampler.hpp).
#include "search/replay_sampler.hpp"

#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace dlsweep::search {

namespace {

bool same_value(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) return std::abs(a.get<double>() - b.get<double>()) <= 1e-12 * (1 + std::abs(a.get<double>()));
  return a == b;
}

bool log_scale(const Dimension& d) { return d.kind == Dimension::Kind::log_uniform || d.log; }

double scaled(double v, bool log) { return log && v > 0 ? std::log(v) : v; }

}  // namespace

std::pair<std::size_t, bool> nearest_trial(const std::vector<RecordedTrial>& trials, const Space& space, const Params& p) {
  // The recorded range of each numeric dimension (scaled), for distances in [0, 1].
  std::map<std::string, std::pair<double, double>> range;
  for (const auto& d : space.dims)
    for (const auto& t : trials)
      if (t.params.contains(d.name) && t.params[d.name].is_number()) {
        const double v = scaled(t.params[d.name].get<double>(), log_scale(d));
        auto [it, fresh] = range.try_emplace(d.name, v, v);
        if (!fresh) it->second = {std::min(it->second.first, v), std::max(it->second.second, v)};
      }
  std::size_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    double dist = 0;
    for (const auto& d : space.dims) {
      const bool has_p = p.contains(d.name), has_t = trials[i].params.contains(d.name);
      if (!has_p || !has_t) { dist += has_p == has_t ? 0 : 1; continue; }
      const auto& a = p[d.name];
      const auto& b = trials[i].params[d.name];
      if (same_value(a, b)) continue;
      if (a.is_number() && b.is_number() && range.contains(d.name)) {
        const auto [lo, hi] = range[d.name];
        const double span = hi > lo ? hi - lo : 1;
        dist += std::abs(scaled(a.get<double>(), log_scale(d)) - scaled(b.get<double>(), log_scale(d))) / span;
      } else {
        dist += 1;
      }
    }
    if (dist < best_d) best_d = dist, best = i;
  }
  return {best, best_d == 0};
}

std::expected<void, std::string> covers_grid(const std::vector<RecordedTrial>& trials, const Space& space) {
  for (const auto& d : space.dims)
    if (d.cardinality() == 0)
      return std::unexpected(fmt::format("`{}` is continuous: the recorded trials cannot cover every value of it", d.name));
  auto grid = make_sampler("grid", space, 0);
  if (!grid) return std::unexpected(grid.error().empty() ? "the space is not a grid" : grid.error().front().what);
  const History none;
  std::int64_t points = 0, missing = 0;
  std::string example;
  for (std::int64_t i = 0;; ++i) {
    auto p = (*grid)->next(i, none);
    if (!p) break;
    ++points;
    if (trials.empty() || !nearest_trial(trials, space, *p).second) {
      if (!missing++) example = p->dump();
    }
  }
  if (missing)
    return std::unexpected(fmt::format("{} of the grid's {} points have no finished trial, e.g. {}", missing, points, example));
  return {};
}

SamplerReplay replay_sampler(const ReplayInput& in, const Space& space, Sampler& sampler, const Pruner& pruner,
                             std::int64_t trials) {
  SamplerReplay out;
  out.sampler = sampler.name();
  Replayer replayer(in, pruner);
  // The recorded sweep's own best and compute: what the replay is measured against.
  double recorded_compute = 0;
  for (const auto& t : in.trials) {
    if (!t.curve.empty()) recorded_compute += position(t.curve.back(), in.compute);
    if (t.status != TrialStatus::complete) continue;
    const auto v = curve_value(t.curve, t.curve.size(), in.maximize, in.rank_final);
    if (v && (!out.recorded_best_value || (in.maximize ? *v > *out.recorded_best_value : *v < *out.recorded_best_value)))
      out.recorded_best = t.number, out.recorded_best_value = v;
  }
  std::map<std::size_t, bool> seen;
  double compute = 0;
  for (std::int64_t i = 0; i < trials; ++i) {
    auto p = sampler.next(i, replayer.history());
    if (!p) break;
    Proposal pr;
    pr.index = i;
    for (const auto& d : space.dims)
      if (p->contains(d.name)) pr.proposed[d.name] = (*p)[d.name];
    const auto [at, exact] = nearest_trial(in.trials, space, *p);
    pr.trial = in.trials[at].number;
    pr.exact = exact;
    pr.repeat = seen.contains(at);
    seen[at] = true;
    out.off_grid += !exact;
    out.repeats += pr.repeat;
    const auto& r = replayer.add(in.trials[at], i);
    compute += r.compute_replayed;
    if (!out.found_at && out.recorded_best && r.number == *out.recorded_best && r.replayed == TrialStatus::complete) {
      out.found_at = i;
      out.compute_to_found = compute;
    }
    out.proposals.push_back(std::move(pr));
  }
  out.outcome = replayer.finish();
  out.outcome.compute_recorded = recorded_compute;
  out.outcome.best_recorded = out.recorded_best;
  out.outcome.best_recorded_value = out.recorded_best_value;
  return out;
}

std::string sampler_summary_line(const SamplerReplay& r, const std::string& metric) {
  const auto& o = r.outcome;
  const auto n = r.proposals.size();
  const auto pct = [&](double c) {
    return o.compute_recorded > 0 ? fmt::format("{:.0f}%", 100 * c / o.compute_recorded) : std::string("?%");
  };
  std::string s;
  if (r.found_at) {
    s = fmt::format("{}: the recorded best (trial {}, {} {:.6g}) found at proposal {} of {}, after {} of the recorded "
                    "compute",
                    r.sampler, *r.recorded_best, metric, *r.recorded_best_value, *r.found_at + 1, n,
                    pct(r.compute_to_found));
  } else if (o.best_replayed) {
    s = fmt::format("{}: best would be trial {} ({} {:.6g}{}) after {} proposals", r.sampler, *o.best_replayed, metric,
                    *o.best_replayed_value,
                    r.recorded_best ? fmt::format(", {:.4g} {} the recorded best, trial {}",
                                                  std::abs(*o.best_replayed_value - *r.recorded_best_value),
                                                  *o.best_replayed_value < *r.recorded_best_value ? "below" : "above",
                                                  *r.recorded_best)
                                    : std::string(),
                    n);
  } else {
    s = fmt::format("{}: no proposal would complete in {} proposals", r.sampler, n);
  }
  s += fmt::format("; {} of the recorded compute in all; pruned {} of {}", pct(o.compute_replayed), o.pruned_replayed, n);
  if (o.unknown) s += fmt::format("; {} unknown beyond where the recorded sweep stopped them", o.unknown);
  if (r.off_grid) s += fmt::format("; {} proposal{} off the grid mapped to the nearest point", r.off_grid, r.off_grid == 1 ? "" : "s");
  if (r.repeats) s += fmt::format("; {} repeated an earlier point", r.repeats);
  return s;
}

}  // namespace dlsweep::search
