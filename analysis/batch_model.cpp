// batch_model.cpp — the least-squares fit of S(B) = S_min (1 + B_crit/B) in log space and its
// bootstrap interval. See batch_model.hpp and docs/math.md#batch-size-model.
#include "analysis/batch_model.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/stats.hpp"

namespace dlsweep::analysis {
namespace {

struct Fit1 {
  double log_bc = 0, log_smin = 0, rss = 0;
  bool at_edge = false;
};

// For fixed c = log B_crit: the best log S_min (closed form) and the residual sum of squares.
std::pair<double, double> profile(const std::vector<BatchPoint>& p, double c) {
  const double bc = std::exp(c);
  double sum = 0;
  for (const auto& x : p) sum += std::log(x.steps) - std::log1p(bc / x.batch);
  const double ls = sum / static_cast<double>(p.size());
  double rss = 0;
  for (const auto& x : p) {
    const double r = std::log(x.steps) - ls - std::log1p(bc / x.batch);
    rss += r * r;
  }
  return {ls, rss};
}

Fit1 fit_once(const std::vector<BatchPoint>& p) {
  double bmin = p.front().batch, bmax = p.front().batch;
  for (const auto& x : p) bmin = std::min(bmin, x.batch), bmax = std::max(bmax, x.batch);
  const double lo = std::log(bmin) - std::log(1e3), hi = std::log(bmax) + std::log(1e3);
  constexpr int kGrid = 400;
  const double h = (hi - lo) / kGrid;
  int best = 0;
  double best_rss = profile(p, lo).second;
  for (int k = 1; k <= kGrid; ++k) {
    const double r = profile(p, lo + h * k).second;
    if (r < best_rss) best_rss = r, best = k;
  }
  // Golden-section refinement inside the bracket around the best grid point.
  double a = lo + h * std::max(0, best - 1), b = lo + h * std::min(kGrid, best + 1);
  const double g = (std::sqrt(5.0) - 1) / 2;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = profile(p, x1).second, f2 = profile(p, x2).second;
  for (int it = 0; it < 100 && b - a > 1e-10; ++it) {
    if (f1 < f2) b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = profile(p, x1).second;
    else a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = profile(p, x2).second;
  }
  Fit1 f;
  f.log_bc = (a + b) / 2;
  if (profile(p, f.log_bc).second > best_rss) f.log_bc = lo + h * best;
  auto [ls, rss] = profile(p, f.log_bc);
  f.log_smin = ls;
  f.rss = rss;
  f.at_edge = best <= 1 || best >= kGrid - 1;
  return f;
}

// splitmix64: a tiny, portable generator (std distributions differ between libraries).
struct SplitMix {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

std::size_t distinct_batches(const std::vector<BatchPoint>& p) {
  std::set<double> s;
  for (const auto& x : p) s.insert(x.batch);
  return s.size();
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Sets f.determined and, when false, why and what to run (docs/math.md#when-b_crit-is-determined).
void judge(BatchFit& f, std::size_t fewest_seeds) {
  std::vector<std::string> why, todo;
  const double span = f.b_crit_lo > 0 ? f.b_crit_hi / f.b_crit_lo : INFINITY;
  if (f.at_edge)
    why.push_back(fmt::format("the fit ran to the edge of its search ({:.3g} .. {:.3g}): the steps show no bend, so "
                              "B_crit = {:.4g} is only a bound",
                              f.batch_lo / 1e3, f.batch_hi * 1e3, f.b_crit));
  else if (f.b_crit > f.batch_hi * kRegimeFactor || f.b_crit < f.batch_lo / kRegimeFactor)
    why.push_back(fmt::format("B_crit = {:.4g} lies more than {:g}x outside the batch sizes fitted ({:g} .. {:g}): "
                              "the data do not show the bend",
                              f.b_crit, kRegimeFactor, f.batch_lo, f.batch_hi));
  if (f.resamples == 0)
    why.push_back("no bootstrap interval was computed");
  else if (!(span <= kDeterminedSpan))
    why.push_back(fmt::format("its {:.0f}% bootstrap interval {:.3g} .. {:.3g} spans a factor {:.3g}, more than {:g}",
                              f.level * 100, f.b_crit_lo, f.b_crit_hi, span, kDeterminedSpan));
  f.determined = why.empty();
  if (f.determined) return;
  f.undetermined_reason = join(why, "; ");
  // Where the interval (or the estimate, at the edge) leaves the measured batch sizes, the
  // data that would close it lie there; an interval inside them is wide from noise.
  const double up = f.at_edge ? f.b_crit : f.b_crit_hi, down = f.at_edge ? f.b_crit : f.b_crit_lo;
  if (up > f.batch_hi)
    todo.push_back(fmt::format("run batch sizes above {0:g} (e.g. {1:g}, {2:g}) long enough to reach the target, until "
                               "a bigger batch stops saving steps",
                               f.batch_hi, 2 * f.batch_hi, 4 * f.batch_hi));
  if (down < f.batch_lo && f.batch_lo > 1)
    todo.push_back(fmt::format("run batch sizes below {0:g} (e.g. {1:g}, {2:g}), where halving the batch should double "
                               "the steps",
                               f.batch_lo, std::max(1.0, std::floor(f.batch_lo / 2)), std::max(1.0, std::floor(f.batch_lo / 4))));
  // Seeds are advised only where some point is one seed's steps: a study that already runs
  // `seed: [1, 2, 3]` was told to add what it has.
  if ((todo.empty() || f.points < 5) && fewest_seeds < 2)
    todo.push_back(fmt::format("run each configuration with 2-3 seeds (`seed: [1, 2, 3]` in `space`) so each batch "
                               "size's steps are a mean, and more batch sizes within {:g} .. {:g} ({} so far)",
                               f.batch_lo, f.batch_hi, f.points));
  else if (todo.empty() || f.points < 5)
    todo.push_back(fmt::format("run more batch sizes within {:g} .. {:g} ({} so far, each a mean of {} or more "
                               "seeds), or more seeds per configuration",
                               f.batch_lo, f.batch_hi, f.points, fewest_seeds));
  f.to_determine = join(todo, "; ");
}

}  // namespace

Result<BatchFit> fit_batch_model(const std::vector<BatchPoint>& points, const FitOptions& opt) {
  for (const auto& x : points)
    if (!(x.batch > 0) || !(x.steps > 0) || !std::isfinite(x.batch) || !std::isfinite(x.steps))
      return fail(fmt::format("a point has batch {} and steps {}: both must be positive numbers", x.batch, x.steps),
                  "batch-size model", "pass only batch sizes whose best trial reached the target");
  const std::size_t n = distinct_batches(points);
  if (n < 3)
    return fail(fmt::format("cannot fit the batch-size model: {} batch size{} reached the target, at least 3 are needed "
                            "(the model has two parameters)",
                            n, n == 1 ? "" : "s"),
                "batch-size model",
                "sweep more batch sizes (e.g. powers of 2) with budgets long enough to reach the target");
  const Fit1 f = fit_once(points);
  BatchFit out;
  out.s_min = std::exp(f.log_smin);
  out.b_crit = std::exp(f.log_bc);
  out.e_min = out.s_min * out.b_crit;
  out.rmse_log = std::sqrt(f.rss / static_cast<double>(points.size()));
  out.points = points.size();
  out.at_edge = f.at_edge;
  out.batch_lo = out.batch_hi = points.front().batch;
  for (const auto& x : points) out.batch_lo = std::min(out.batch_lo, x.batch), out.batch_hi = std::max(out.batch_hi, x.batch);
  out.level = opt.level;
  out.b_crit_lo = out.b_crit_hi = out.b_crit;
  if (opt.bootstrap > 0) {
    SplitMix rng{opt.seed};
    std::vector<double> logs;
    std::vector<BatchPoint> sample(points.size());
    for (int r = 0; r < opt.bootstrap; ++r) {
      for (auto& s : sample) s = points[rng.next() % points.size()];
      if (distinct_batches(sample) < 2) continue;  // one batch size says nothing about the bend
      logs.push_back(fit_once(sample).log_bc);
    }
    out.resamples = static_cast<int>(logs.size());
    if (!logs.empty()) {
      out.b_crit_lo = std::exp(percentile(logs, (1 - opt.level) / 2));
      out.b_crit_hi = std::exp(percentile(logs, (1 + opt.level) / 2));
    }
  }
  std::size_t fewest_seeds = points.empty() ? 1 : points.front().seeds;
  for (const auto& x : points) fewest_seeds = std::min(fewest_seeds, x.seeds);
  judge(out, fewest_seeds);
  return out;
}

double steps_at(const BatchFit& f, double batch) { return f.s_min * (1 + f.b_crit / batch); }
double samples_at(const BatchFit& f, double batch) { return f.e_min * (1 + batch / f.b_crit); }

Regime classify(double batch, double b_crit) {
  if (batch <= b_crit / kRegimeFactor) return Regime::perfect_scaling;
  if (batch >= b_crit * kRegimeFactor) return Regime::maximal_parallelism;
  return Regime::diminishing_returns;
}

std::string regime_name(Regime r) {
  switch (r) {
    case Regime::perfect_scaling: return "perfect scaling";
    case Regime::diminishing_returns: return "diminishing returns";
    case Regime::maximal_parallelism: return "maximal data parallelism";
  }
  return "?";
}

std::string regime_id(Regime r) {
  switch (r) {
    case Regime::perfect_scaling: return "perfect_scaling";
    case Regime::diminishing_returns: return "diminishing_returns";
    case Regime::maximal_parallelism: return "maximal_parallelism";
  }
  return "?";
}

}  // namespace dlsweep::analysis
