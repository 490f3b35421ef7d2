// explain.cpp — the winner and its evidence. See explain.hpp and docs/math.md#best-explained.
#include "analysis/explain.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/objective.hpp"

namespace dlsweep::analysis {

namespace {

// Time and steps are compared on log scale (seed noise is multiplicative), values as they are.
double transform(double v, Criterion c) { return c == Criterion::value ? v : std::log(std::max(v, 1e-300)); }

std::vector<double> transformed(const std::vector<double>& xs, Criterion c) {
  std::vector<double> out;
  for (double x : xs) out.push_back(transform(x, c));
  return out;
}

}  // namespace

Explanation explain_best(const StudyData& study, RankBy by, const FitOptions& fit_opt) {
  Explanation e;
  e.study = study.name;
  e.metric = study.metric;
  e.mode = study.mode;
  e.target = study.target;
  e.table = target_table(study);
  // The winner and the order: the one ranking (analysis/ranking.hpp).
  const Ranking ranking = rank(study, by);
  const Criterion criterion = ranking.criterion;
  e.criterion = criterion;
  e.final = ranking.final;
  e.complete = ranking.complete;
  e.reached = ranking.reached;
  for (std::size_t i = 0; i < study.trials.size(); ++i)
    e.pooled_over_several += study.trials[i].complete() && ranking.pooled[i] && ranking.pooled[i]->trials > 1;

  // Pooled seed noise on the compared scale, from the own readings (a pooled time is shared
  // by the seeds that reach the target at one step, so it hides their spread).
  double ss = 0, dof = 0;
  for (const auto& r : ranking.order) {
    if (r.own.size() < 2) continue;
    const auto own = transformed(r.own, criterion);
    const double m = summarize(own).mean;
    for (double v : own) ss += (v - m) * (v - m);
    dof += static_cast<double>(own.size() - 1);
  }
  if (dof > 0) e.seed_log_sd = std::sqrt(ss / dof);

  auto contender = [&](const RankedGroup& r) {
    const SeedGroup& g = ranking.groups[r.group];
    Contender c;
    for (std::size_t i : g.members) c.trials.push_back(study.trials[i].number);
    c.best_trial = study.trials[r.members.front()].number;
    c.config = describe_params(g.config, study.trials);
    c.batch = g.batch;
    c.n = g.members.size();
    c.mean = r.value.mean;
    c.std = r.own_stat.std;
    return c;
  };
  if (ranking.winner()) {  // not when only infeasible groups rank (rule 7)
    e.winner = contender(ranking.order.front());
    const double wm = summarize(transformed(ranking.order.front().values, criterion)).mean;
    for (std::size_t k = 1; k < ranking.order.size(); ++k) {
      Contender c = contender(ranking.order[k]);
      c.delta_rel = e.winner->mean != 0 ? (c.mean - e.winner->mean) / std::abs(e.winner->mean) : 0;
      if (e.seed_log_sd) {
        const double m = summarize(transformed(ranking.order[k].values, criterion)).mean;
        const double se = *e.seed_log_sd * std::sqrt(1.0 / e.winner->n + 1.0 / c.n);
        if (std::abs(m - wm) <= 2 * se) e.runner_ups.push_back(std::move(c));
      } else if (e.runner_ups.size() < 2) {
        e.runner_ups.push_back(std::move(c));
      }
    }
    e.runner_ups_within_noise = e.seed_log_sd.has_value();
  }

  // The batch-size model on the best-per-batch points.
  std::vector<BatchPoint> pts;
  for (const BatchRow* r : e.table.reaching_rows()) pts.push_back({static_cast<double>(r->batch), r->steps->mean, r->steps->n});
  if (!study.target) e.fit_refusal = "the study has no objective target, so there are no steps to a target to fit";
  else if (auto f = fit_batch_model(pts, fit_opt)) e.fit = *f;
  else e.fit_refusal = f.error().what;
  // An undetermined B_crit names no regime (docs/math.md#when-b_crit-is-determined).
  const bool known = e.fit && e.fit->determined;
  if (known && e.winner && e.winner->batch > 0) e.regime = classify(static_cast<double>(e.winner->batch), e.fit->b_crit);

  if (e.winner)
    for (const auto& s : learning_speedups(e.table))
      if (s.batch == e.winner->batch) e.speedup = s;
  e.scaling = scaling_tables(study);
  const auto noise = noise_scales(study);
  e.noise_reported = !noise.empty();
  e.noise = summarize_noise(study, noise, known ? std::optional<double>(e.fit->b_crit) : std::nullopt);

  for (const auto& t : study.trials) {
    if (!t.complete()) {
      auto it = std::find_if(e.table.excluded.begin(), e.table.excluded.end(), [&](auto& x) { return x.trial == t.number; });
      e.excluded.push_back({t.number, it != e.table.excluded.end() ? it->reason : t.state});
    } else if (criterion != Criterion::value && !t.reached()) {
      e.excluded.push_back({t.number, fmt::format("COMPLETE but never reached the target{}",
                                                  t.best_value ? fmt::format(" (best {} {:.4g})", study.metric, *t.best_value)
                                                               : std::string())});
    } else if (!has_value(t, criterion, ranking.final)) {
      e.excluded.push_back({t.number, "COMPLETE but reported no " + study.metric});
    }
  }
  // Replicates of a configuration that failed on some seeds cannot win either.
  for (std::size_t gi = 0; gi < ranking.groups.size(); ++gi) {
    if (ranking.ranks(gi)) continue;
    const auto& g = ranking.groups[gi];
    for (std::size_t i : g.members) {
      const auto& t = study.trials[i];
      if (!has_value(t, criterion, ranking.final)) continue;
      e.excluded.push_back({t.number, fmt::format("its configuration did not reach the target on every seed ({} of {})",
                                                  g.reached, g.members.size())});
    }
  }
  std::sort(e.excluded.begin(), e.excluded.end(), [](auto& a, auto& b) { return a.trial < b.trial; });
  return e;
}

namespace {

std::string trials_text(const std::vector<std::int64_t>& ts) {
  std::string s = ts.size() == 1 ? "trial " : "trials ";
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ts[i]);
  }
  return s;
}

std::string value_text(const Explanation& e, double v) {
  switch (e.criterion) {
    case Criterion::time: return fmt::format("{:.3g} s", v);
    case Criterion::steps: return fmt::format("{:.0f} steps", v);
    case Criterion::value: return fmt::format("{:.4g}", v);
  }
  return "";
}

}  // namespace

std::vector<std::string> Explanation::lines() const {
  std::vector<std::string> out;
  if (!winner) {
    if (complete == 0) out.push_back("no COMPLETE trial: nothing to recommend");
    else if (criterion != Criterion::value && target && reached == 0)
      out.push_back(fmt::format("no COMPLETE trial reached the target {:g}: nothing to recommend by {} (`--by value` "
                                "ranks them by {})", *target, criterion_name(criterion, final), metric));
    else out.push_back("no COMPLETE trial has a usable value");
  } else {
    const auto& w = *winner;
    std::string what = criterion == Criterion::value
                           ? fmt::format("{} {} {}", final ? "final" : "best", metric, value_text(*this, w.mean))
                           : fmt::format("{} to {} {} {:g}: {}", criterion == Criterion::time ? "time" : "steps", metric,
                                         reach_op(mode), *target, value_text(*this, w.mean));
    out.push_back(fmt::format("winner: {} ({}), {}{}", trials_text(w.trials), w.config, what,
                              w.n > 1 ? fmt::format(" (mean of {} seeds, std {}; its best seed: trial {})", w.n,
                                                    value_text(*this, w.std), w.best_trial)
                                      : ""));
  }
  if (target) out.push_back(fmt::format("{} of {} COMPLETE trials reached the target {:g}", reached, complete, *target));
  if (criterion == Criterion::time && pooled_over_several > 0)
    out.push_back(fmt::format("times to target are pooled: for {} trial{}, the median of when every trial that trains at "
                              "the same speed (same parameters but LR schedule, optimizer scalars, timeline and seed) passed "
                              "that trial's step, so one trial's timing luck does not decide the ranking",
                              pooled_over_several, pooled_over_several == 1 ? "" : "s"));
  if (fit) {
    out.push_back(fmt::format("batch-size model: B_crit = {:.4g} ({:.0f}% bootstrap interval {:.4g} .. {:.4g}, {} resamples), "
                              "S_min = {:.4g} steps, E_min = {:.4g} samples, fitted on {} batch sizes {:g}..{:g}{}",
                              fit->b_crit, fit->level * 100, fit->b_crit_lo, fit->b_crit_hi, fit->resamples, fit->s_min,
                              fit->e_min, fit->points, fit->batch_lo, fit->batch_hi,
                              fit->at_edge ? " (at the edge of the search: no bend in the data, a bound only)" : ""));
    if (!fit->determined)
      out.push_back(fmt::format("B_crit is not determined: {}. No regime is named. To determine it: {}",
                                fit->undetermined_reason, fit->to_determine));
  } else if (!fit_refusal.empty()) {
    out.push_back("no batch-size model: " + fit_refusal);
  }
  if (regime && winner)
    out.push_back(fmt::format("regime of batch {}: {} (rule: perfect scaling at B <= B_crit/4, maximal data parallelism "
                              "at B >= 4 B_crit, diminishing returns between)",
                              winner->batch, regime_name(*regime)));
  if (speedup && !table.reaching_rows().empty()) {
    const auto base = table.reaching_rows().front()->batch;
    std::string s = fmt::format("speedups vs batch {}: learning {:.3g}x (steps)", base, speedup->learning_speedup);
    if (speedup->parallel_speedup) s += fmt::format(", parallel {:.3g}x (time per step)", *speedup->parallel_speedup);
    if (speedup->time_speedup) s += fmt::format(", time-to-solution {:.3g}x", *speedup->time_speedup);
    out.push_back(s);
  }
  for (const auto& t : scaling) {
    auto rows = [&](const std::vector<ScalingRow>& series, bool weak) {
      if (series.empty()) return;
      out.push_back(fmt::format("{} scaling over {} (throughput; efficiency = speedup / resource ratio):",
                                weak ? "weak" : "strong", t.resource));
      for (const auto& r : series)
        out.push_back(fmt::format("  {}={}: {:.4g} samples/s, speedup {:.3g}x, efficiency {:.0f}% ({}batch {}{})",
                                  t.resource, r.resources, r.samples_per_s.mean, r.speedup, r.efficiency * 100,
                                  r.config.empty() ? "" : r.config + ", ", r.batch,
                                  weak ? fmt::format(", {:g} per worker", r.per_worker_batch) : ""));
    };
    rows(t.strong, /*weak=*/false);
    rows(t.weak, /*weak=*/true);
  }
  if (noise.median_at_target) {
    std::string s = fmt::format("gradient noise scale B_simple at the target: median {:.4g} over {} trials (range {:.4g} .. {:.4g})",
                                *noise.median_at_target, noise.trials, *noise.lo, *noise.hi);
    if (noise.ratio_to_b_crit) s += fmt::format("; B_simple / B_crit = {:.3g}", *noise.ratio_to_b_crit);
    out.push_back(s);
  } else if (fit && !noise_reported) {
    out.push_back("gradient noise scale: no trial reported the metric grad_noise_scale (B_simple), so it is not "
                  "compared with B_crit; a program reports it with its eval records (README, \"Metrics the analysis "
                  "reads\")");
  }
  if (winner) {
    if (runner_ups_within_noise) {
      if (runner_ups.empty())
        out.push_back(fmt::format("no other configuration is within seed noise (pooled seed std {:.3g}{})", *seed_log_sd,
                                  criterion == Criterion::value ? "" : " on log scale"));
      else
        out.push_back(fmt::format("within seed noise of the winner (pooled seed std {:.3g}{}; 2 standard errors):",
                                  *seed_log_sd, criterion == Criterion::value ? "" : " on log scale"));
    } else if (!runner_ups.empty()) {
      out.push_back("seed noise unknown (no configuration was run with several seeds); next best:");
    }
    for (const auto& r : runner_ups)
      out.push_back(fmt::format("  {} ({}): {} ({:+.1f}%)", trials_text(r.trials), r.config, value_text(*this, r.mean),
                                r.delta_rel * 100));
  }
  if (!excluded.empty()) {
    out.push_back(fmt::format("excluded ({}):", excluded.size()));
    const std::size_t shown = std::min<std::size_t>(excluded.size(), 12);
    for (std::size_t i = 0; i < shown; ++i) out.push_back(fmt::format("  trial {}: {}", excluded[i].trial, excluded[i].reason));
    if (shown < excluded.size()) out.push_back(fmt::format("  ... and {} more (--format json lists all)", excluded.size() - shown));
  }
  return out;
}

}  // namespace dlsweep::analysis
