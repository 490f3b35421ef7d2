// goodput.cpp — step-time samples, the step-time model fit, predictions and the plan.
// See goodput.hpp and docs/math.md#the-plan.
#include "analysis/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "analysis/stats.hpp"

namespace dlsweep::analysis {

std::vector<StepSample> step_samples(const StudyData& study) {
  std::vector<StepSample> out;
  for (const auto& t : study.trials) {
    if (!t.complete() || t.batch_ramp || t.batch <= 0) continue;
    std::vector<const EvalPoint*> ev;
    for (const auto& p : t.curve)
      if (!p.final && p.t_compute_s && (ev.empty() || p.step > ev.back()->step)) ev.push_back(&p);
    if (ev.size() < 2) continue;
    const EvalPoint& first = *ev.front();
    const EvalPoint& last = *ev.back();
    double evals = 0, allreduce = 0;
    std::vector<double> eval_each, gaps;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      eval_each.push_back(ev[i]->t_eval_s.value_or(0));
      if (i == 0) continue;
      evals += ev[i]->t_eval_s.value_or(0);
      allreduce += ev[i]->t_allreduce_s.value_or(0);
      gaps.push_back(static_cast<double>(ev[i]->samples - ev[i - 1]->samples));
    }
    const double steps = static_cast<double>(last.step - first.step);
    const double per_step = (last.wall_s - first.wall_s - evals) / steps;
    if (!(per_step > 0)) continue;
    StepSample s;
    s.trial = t.number;
    s.ranks = t.ranks;
    s.threads = t.threads;
    s.batch = t.batch;
    s.per_rank_batch = static_cast<double>(t.batch) / t.ranks;
    s.steps = last.step - first.step;
    s.allreduce_s = std::min(allreduce / steps, per_step);
    s.compute_s = per_step - s.allreduce_s;
    s.eval_s = summarize(eval_each).mean;
    s.start_s = std::max(0.0, first.wall_s - static_cast<double>(first.step) * per_step - first.t_eval_s.value_or(0));
    s.eval_interval_samples = median(gaps);
    for (const EvalPoint* p : ev) s.eval_timed |= p->t_eval_s.has_value(), s.allreduce_timed |= p->t_allreduce_s.has_value();
    out.push_back(s);
  }
  return out;
}

Result<StepTimeModel> fit_step_time(const std::vector<StepSample>& samples) {
  std::set<double> sizes;
  for (const auto& s : samples) sizes.insert(s.per_rank_batch);
  if (sizes.size() < 2)
    return fail(fmt::format("cannot fit the step-time model: {} per-rank batch size{} with timings, at least 2 are needed",
                            sizes.size(), sizes.size() == 1 ? "" : "s"),
                "step-time model",
                "run complete trials at two or more batch sizes, each reporting time_compute_s with its eval records");
  // Weighted least squares of y = a + b x with weights 1/y^2 (relative error).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& s : samples) {
    const double w = 1 / (s.compute_s * s.compute_s), x = s.per_rank_batch, y = s.compute_s;
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  StepTimeModel m;
  const double det = sw * sxx - sx * sx;
  m.b_c = (sw * sxy - sx * sy) / det;
  m.a_c = (sy - m.b_c * sx) / sw;
  if (m.b_c < 0) {  // time cannot fall with a bigger batch: a constant per-step cost only
    m.b_c = 0;
    m.a_c = sy / sw;
  } else if (m.a_c < 0) {  // nor be negative at a small batch: a per-sample cost only, y = b x
    m.a_c = 0;
    m.b_c = sxy / sxx;
  }
  m.compute_points = samples.size();
  double rel = 0;
  for (const auto& s : samples) {
    const double r = (m.a_c + m.b_c * s.per_rank_batch - s.compute_s) / s.compute_s;
    rel += r * r;
  }
  m.compute_rms_rel = std::sqrt(rel / static_cast<double>(samples.size()));
  std::map<int, std::vector<double>> ar, ev;
  std::vector<double> starts, gaps;
  for (const auto& s : samples) {
    if (s.ranks > 1) ar[s.ranks].push_back(s.allreduce_s);
    ev[s.ranks].push_back(s.eval_s);
    starts.push_back(s.start_s);
    if (s.eval_interval_samples > 0) gaps.push_back(s.eval_interval_samples);
    m.eval_untimed += !s.eval_timed;
    m.allreduce_untimed += s.ranks > 1 && !s.allreduce_timed;
  }
  for (auto& [n, xs] : ar) m.allreduce_measured[n] = summarize(xs).mean;
  for (auto& [n, xs] : ev) m.eval_measured[n] = summarize(xs).mean;
  m.start_s = summarize(starts).mean;
  m.eval_interval_samples = median(gaps);
  if (m.allreduce_measured.size() >= 2) {
    // Pollux's T_net = a + b max(N - 2, 0), ordinary least squares over the measured N.
    double n = 0, x = 0, y = 0, xx = 0, xy = 0;
    for (auto& [r, t] : m.allreduce_measured) {
      const double u = std::max(r - 2, 0);
      n += 1, x += u, y += t, xx += u * u, xy += u * t;
    }
    const double d = n * xx - x * x;
    m.net_b = d != 0 ? (n * xy - x * y) / d : 0;
    m.net_a = (y - m.net_b * x) / n;
    m.net_rule = fmt::format("T_net(N) = {:.3g} s + {:.3g} s x max(N-2, 0) (Pollux form, least squares over {} measured "
                             "rank counts); measured values used where measured",
                             m.net_a, m.net_b, m.allreduce_measured.size());
  } else if (m.allreduce_measured.size() == 1) {
    auto [r, t] = *m.allreduce_measured.begin();
    m.net_rule = fmt::format("T_net(N) = {:.3g} s (measured at N={}) x [2(N-1)/N] / [2({}-1)/{}] (ring-allreduce bandwidth "
                             "term; latency growth with N ignored)",
                             t, r, r, r);
  } else {
    m.net_rule = "no multi-rank trial was measured: the allreduce is taken as free (T_net = 0), so predictions for "
                 "N > 1 are lower bounds";
  }
  return m;
}

Result<StepTimeModel> fit_step_time(const StudyData& study) {
  auto model = fit_step_time(step_samples(study));
  if (model) return model;
  // Say what the trials lack, so a user program knows which metric to report.
  std::size_t complete = 0, single = 0, evals = 0, timed = 0;
  for (const auto& t : study.trials) {
    if (!t.complete()) continue;
    ++complete;
    if (t.batch_ramp || t.batch <= 0) continue;
    ++single;
    std::size_t ev = 0, tv = 0;
    for (const auto& p : t.curve)
      if (!p.final) ++ev, tv += p.t_compute_s.has_value();
    evals += ev >= 2;
    timed += tv >= 2;
  }
  const std::string where = "step-time model";
  const std::string report = "report time_compute_s (seconds of training since the previous eval record) with every "
                             "eval record, and time_eval_s (seconds the evaluation took) and, on several ranks, "
                             "time_allreduce_exposed_s (README, \"Metrics the analysis reads\")";
  if (complete == 0)
    return fail("cannot fit the step-time model: no trial is COMPLETE", where,
                "let trials finish: step times are measured on COMPLETE trials");
  if (single == 0)
    return fail(fmt::format("cannot fit the step-time model: none of the {} COMPLETE trials has one batch size", complete),
                where, "give the trials a batch_size parameter (or report the metric batch_size) and no batch_ramp");
  if (evals == 0)
    return fail(fmt::format("cannot fit the step-time model: none of the {} COMPLETE trials with one batch size has two "
                            "or more eval records (the step time is measured between them)",
                            single),
                where, "report an eval record more than once per trial (e.g. every epoch), and " + report);
  if (timed == 0)
    return fail(fmt::format("cannot fit the step-time model: none of the {} COMPLETE trials with one batch size reported "
                            "time_compute_s in its eval records",
                            evals),
                where, report);
  Error e = model.error();
  if (timed < evals)
    e.what += fmt::format(" ({} of the {} COMPLETE trials with one batch size reported time_compute_s)", timed, evals);
  return std::unexpected(e);
}

double compute_time(const StepTimeModel& m, double per_rank_batch) { return m.a_c + m.b_c * per_rank_batch; }

double allreduce_time(const StepTimeModel& m, int ranks) {
  if (ranks <= 1) return 0;
  if (auto it = m.allreduce_measured.find(ranks); it != m.allreduce_measured.end()) return it->second;
  if (m.allreduce_measured.size() >= 2) return std::max(0.0, m.net_a + m.net_b * std::max(ranks - 2, 0));
  if (m.allreduce_measured.size() == 1) {
    auto [r, t] = *m.allreduce_measured.begin();
    auto ring = [](double n) { return 2 * (n - 1) / n; };
    return t * ring(ranks) / ring(r);
  }
  return 0;
}

double eval_time(const StepTimeModel& m, int ranks) {
  if (auto it = m.eval_measured.find(ranks); it != m.eval_measured.end()) return it->second;
  if (m.eval_measured.empty()) return 0;
  auto [r, t] = *m.eval_measured.begin();  // the smallest measured rank count
  return t * r / ranks;
}

Prediction predict_with_steps(double steps, const StepTimeModel& m, double batch, int ranks,
                              std::optional<double> b_crit) {
  Prediction p;
  p.batch = batch;
  p.ranks = ranks;
  p.steps = steps;
  p.samples = steps * batch;
  p.compute_s = compute_time(m, batch / ranks);
  p.allreduce_s = allreduce_time(m, ranks);
  p.step_s = p.compute_s + p.allreduce_s;
  p.evals = m.eval_interval_samples > 0 ? std::ceil(p.samples / m.eval_interval_samples - 1e-9) : 0;
  p.eval_s = eval_time(m, ranks);
  p.start_s = m.start_s;
  p.time_s = p.start_s + p.steps * p.step_s + p.evals * p.eval_s;
  if (b_crit) p.regime = classify(batch, *b_crit);
  return p;
}

Prediction predict(const BatchFit& fit, const StepTimeModel& m, double batch, int ranks) {
  return predict_with_steps(steps_at(fit, batch), m, batch, ranks,
                            fit.determined ? std::optional<double>(fit.b_crit) : std::nullopt);
}

Result<Plan> make_plan(const BatchFit& fit, const StepTimeModel& m, const std::vector<int>& ranks, const PlanOptions& opt) {
  if (ranks.empty()) return fail("no rank counts to plan for", "--ranks", "pass e.g. --ranks 1,2,8,64");
  for (int n : ranks)
    if (n < 1) return fail(fmt::format("rank count {} is not positive", n), "--ranks", "pass positive integers, e.g. 1,2,8,64");
  const double lo = opt.batch_lo > 0 ? opt.batch_lo : fit.batch_lo;
  const double hi = opt.batch_hi > 0 ? opt.batch_hi : fit.batch_hi;
  if (!(lo > 0) || !(hi >= lo))
    return fail(fmt::format("batch range {}..{} is empty", lo, hi), "plan", "fit the batch-size model first");
  Plan plan;
  const int k = std::max(2, opt.candidates);
  for (int n : ranks) {
    PlanRow row;
    row.ranks = n;
    std::set<double> seen;
    for (int i = 0; i < k; ++i) {
      const double b = lo * std::pow(hi / lo, static_cast<double>(i) / (k - 1));
      const double rounded = std::max<double>(n, std::round(b / n) * n);  // a whole per-rank batch
      if (!seen.insert(rounded).second) continue;
      row.candidates.push_back(predict(fit, m, rounded, n));
    }
    row.best = *std::min_element(row.candidates.begin(), row.candidates.end(),
                                 [](auto& a, auto& b) { return a.time_s < b.time_s; });
    plan.rows.push_back(std::move(row));
  }
  plan.inputs.push_back(fmt::format("batch-size model: S_min = {:.4g} steps, B_crit = {:.4g} ({:.0f}% interval {:.4g} .. "
                                    "{:.4g}), E_min = {:.4g} samples; fitted on {} batch sizes {:g} .. {:g} "
                                    "(RMS log residual {:.3f})",
                                    fit.s_min, fit.b_crit, fit.level * 100, fit.b_crit_lo, fit.b_crit_hi, fit.e_min,
                                    fit.points, fit.batch_lo, fit.batch_hi, fit.rmse_log));
  if (!fit.determined)
    plan.inputs.push_back(fmt::format("B_crit is not determined ({}), so no regime is named; S(B) is used only within "
                                      "the batch sizes measured. To determine it: {}",
                                      fit.undetermined_reason, fit.to_determine));
  plan.inputs.push_back(fmt::format("compute per step: {:.4g} s + {:.4g} s x per-rank batch (fitted on {} trials, RMS "
                                    "relative residual {:.1f}%)",
                                    m.a_c, m.b_c, m.compute_points, m.compute_rms_rel * 100));
  for (auto& [n, t] : m.allreduce_measured)
    plan.inputs.push_back(fmt::format("exposed allreduce per step measured at {} ranks: {:.4g} s", n, t));
  if (m.eval_untimed < m.compute_points)  // else nothing was measured: said below
    for (auto& [n, t] : m.eval_measured)
      plan.inputs.push_back(fmt::format("one evaluation measured at {} rank{}: {:.4g} s", n, n == 1 ? "" : "s", t));
  plan.inputs.push_back(fmt::format("startup before the first step: {:.3g} s; samples between evaluations: {:.0f}",
                                    m.start_s, m.eval_interval_samples));
  // Missing timings are said, with the metric that would give them (README, "Metrics the analysis reads").
  if (m.eval_untimed > 0)
    plan.inputs.push_back(fmt::format("{} of the {} trials reported no time_eval_s: their evaluations count as step time "
                                      "(report time_eval_s, the seconds each evaluation took, to separate them)",
                                      m.eval_untimed, m.compute_points));
  if (m.allreduce_untimed > 0)
    plan.inputs.push_back(fmt::format("{} multi-rank trial(s) reported no time_allreduce_exposed_s: their allreduce counts "
                                      "as compute and is taken as 0 (report time_allreduce_exposed_s to measure it)",
                                      m.allreduce_untimed));
  plan.assumptions = {
      "steps to target follow the fitted S(B) = S_min (1 + B_crit/B) at every rank count (data parallelism changes the "
      "speed, not the trajectory: the loss is averaged over the global batch)",
      fmt::format("candidate batches: {} sizes spaced geometrically over {:g} .. {:g} (the fitted range; no "
                  "extrapolation), rounded to a multiple of N",
                  k, lo, hi),
      "compute time per step depends only on the per-rank batch B/N (same threads per rank, same hardware as measured)",
      "allreduce: " + m.net_rule,
      "the exposed allreduce adds to compute (it is measured after overlap with backward)",
      "evaluations happen every measured interval of samples; one evaluation takes the time measured at N ranks, or "
      "the 1-rank time / N where N was not measured (the test set is split across ranks)",
      "learning-rate and other settings per batch are those of the best trials measured (re-tuned per batch size)",
  };
  return plan;
}

}  // namespace dlsweep::analysis
