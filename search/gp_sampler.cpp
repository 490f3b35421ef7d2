// gp_sampler.cpp — the trials as data for the GP, the acquisition, and the decoding.
#include "search/gp_sampler.hpp"

#include "common/hash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "search/conditional.hpp"
#include "search/gp_acquisition.hpp"
#include "search/gp_ehvi.hpp"
#include "search/gp_fit.hpp"
#include "search/gp_kernel.hpp"
#include "search/log_ei.hpp"
#include "search/pareto.hpp"
#include "search/parzen_estimator.hpp"

namespace dlsweep::search {

GpOptions GpOptions::read(OptionReader& r) {
  GpOptions o;
  o.startup_trials = r.integer("startup_trials", o.startup_trials, 1, 1'000'000);
  o.candidates = r.integer("candidates", o.candidates, 1, 1'000'000);
  o.local_starts = r.integer("local_starts", o.local_starts, 0, 1'000);
  o.fit_restarts = r.integer("fit_restarts", o.fit_restarts, 0, 100);
  o.deterministic_objective = r.boolean("deterministic_objective", o.deterministic_objective);
  o.constant_liar = r.boolean("constant_liar", o.constant_liar);
  o.startup_qmc = read_startup(r);
  o.ehvi = r.word("multi_objective", "ehvi", {"ehvi", "parego"}) == "ehvi";
  return o;
}

GpSampler::GpSampler(Space space, std::uint64_t seed, GpOptions options)
    : space_(std::move(space)), seed_(seed), o_(options), random_(space_, seed) {
  if (qmc_fits(space_)) qmc_startup_.emplace(space_, seed, /*scramble=*/true);
}

namespace {

// The unconditional dimensions as encoded columns.
struct Encoding {
  std::vector<InternalDim> dims;
  std::vector<std::size_t> index;  ///< into space.dims

  std::optional<Eigen::VectorXd> encode(const Params& p) const {
    Eigen::VectorXd x(static_cast<Eigen::Index>(dims.size()));
    for (std::size_t j = 0; j < dims.size(); ++j) {
      auto it = p.find(dims[j].dim->name);
      if (it == p.end()) return std::nullopt;
      auto v = dims[j].to_internal(*it);
      if (!v) return std::nullopt;
      x(static_cast<Eigen::Index>(j)) = dims[j].categorical ? *v : (*v - dims[j].low) / (dims[j].high - dims[j].low);
    }
    return x;
  }
  nlohmann::json value(std::size_t j, double u) const {
    const auto& d = dims[j];
    return d.from_internal(d.categorical ? u : d.low + std::clamp(u, 0.0, 1.0) * (d.high - d.low));
  }
  void snap(Eigen::VectorXd& x) const {
    for (std::size_t j = 0; j < dims.size(); ++j)
      if (dims[j].discrete || dims[j].categorical) x(static_cast<Eigen::Index>(j)) = *encode_one(j, value(j, x(static_cast<Eigen::Index>(j))));
  }
  std::optional<double> encode_one(std::size_t j, const nlohmann::json& v) const {
    auto i = dims[j].to_internal(v);
    if (!i) return std::nullopt;
    return dims[j].categorical ? *i : (*i - dims[j].low) / (dims[j].high - dims[j].low);
  }
};

struct Standardised {
  Eigen::VectorXd y;
  double mean = 0, sd = 1;
};

Standardised standardise(const std::vector<double>& v) {
  Standardised s;
  const auto n = static_cast<double>(v.size());
  for (double x : v) s.mean += x / n;
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean) / n;
  s.sd = var > 1e-24 ? std::sqrt(var) : 1.0;
  s.y.resize(static_cast<Eigen::Index>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) s.y(static_cast<Eigen::Index>(i)) = (v[i] - s.mean) / s.sd;
  return s;
}

// ParEGO's augmented Chebyshev scalarisation of each trial's losses, normalised over them.
std::vector<double> scalarise(const std::vector<Losses>& losses, SplitMix64& rng) {
  const std::size_t m = losses.front().size();
  std::vector<double> w(m), lo(m, std::numeric_limits<double>::infinity()), hi(m, -std::numeric_limits<double>::infinity());
  double sum = 0;
  for (auto& x : w) sum += x = -std::log(1.0 - rng.next_unit());  // a flat Dirichlet draw
  for (auto& x : w) x /= sum;
  for (const auto& l : losses)
    for (std::size_t k = 0; k < m; ++k) lo[k] = std::min(lo[k], l[k]), hi[k] = std::max(hi[k], l[k]);
  std::vector<double> out;
  for (const auto& l : losses) {
    double mx = -std::numeric_limits<double>::infinity(), s = 0;
    for (std::size_t k = 0; k < m; ++k) {
      const double z = hi[k] > lo[k] ? (l[k] - lo[k]) / (hi[k] - lo[k]) : 0.0;
      mx = std::max(mx, w[k] * z);
      s += w[k] * z;
    }
    out.push_back(mx + 0.05 * s);
  }
  return out;
}

}  // namespace

std::optional<Params> GpSampler::next(std::int64_t number, const History& history) {
  std::vector<const TrialRecord*> sorted;
  for (const auto& t : history.trials) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->number < b->number; });

  Encoding enc;
  for (std::size_t i : sampling_order(space_))
    if (space_.dims[i].when.empty()) {
      enc.dims.emplace_back(space_.dims[i]);
      enc.index.push_back(i);
    }
  // The COMPLETE trials with a value and every modelled parameter; the running ones.
  std::vector<Eigen::VectorXd> xs, pending;
  std::vector<double> loss;
  std::vector<Losses> losses;
  std::vector<std::vector<double>> constraints;
  std::vector<bool> feasible;
  const bool multi = history.multi_objective();
  for (auto* t : sorted) {
    if (t->number == number) continue;
    auto x = enc.encode(t->params);
    if (t->status == TrialStatus::running) {
      if (x && o_.constant_liar) pending.push_back(*x);
      continue;
    }
    if (t->status != TrialStatus::complete || !x) continue;
    if (multi) {
      auto l = to_losses(*t, history);
      if (!l) continue;
      losses.push_back(*l);
    } else {
      if (!t->value || !std::isfinite(*t->value)) continue;
      loss.push_back(history.maximize ? -*t->value : *t->value);
    }
    xs.push_back(*x);
    constraints.push_back(t->constraints);
    feasible.push_back(!history.constrained || (!t->constraints.empty() && total_violation(t->constraints) <= 0));
  }
  if (static_cast<std::int64_t>(xs.size()) < o_.startup_trials || enc.dims.empty())
    return qmc_startup_ && o_.startup_qmc.value_or(false) ? qmc_startup_->next(number, history) : random_.next(number, history);

  const std::uint64_t trial_key = SplitMix64::mix(SplitMix64::mix(seed_ ^ 0x67705f73616dULL) ^ static_cast<std::uint64_t>(number));
  // Two or three objectives: a GP per objective and expected hypervolume improvement; more
  // (or `multi_objective: parego`): one GP of a scalarisation with weights drawn for n.
  const std::size_t n_objectives = multi ? losses.front().size() : 1;
  const bool ehvi = multi && o_.ehvi && n_objectives >= 2 && n_objectives <= 3;
  if (multi && !ehvi) {
    SplitMix64 wr(SplitMix64::mix(trial_key ^ fnv1a64("\x01weights")));
    loss = scalarise(losses, wr);
  }
  const auto n = static_cast<Eigen::Index>(xs.size()), d = static_cast<Eigen::Index>(enc.dims.size());
  Eigen::MatrixXd X(n, d);
  for (Eigen::Index i = 0; i < n; ++i) X.row(i) = xs[static_cast<std::size_t>(i)].transpose();
  std::vector<bool> cat;
  gp::Box box;
  for (const auto& dim : enc.dims) {
    cat.push_back(dim.categorical);
    box.choices.push_back(dim.categorical ? dim.k : 0);
  }
  box.snap = [&](Eigen::VectorXd& x) { enc.snap(x); };
  Eigen::MatrixXd P(static_cast<Eigen::Index>(pending.size()), d);
  for (std::size_t i = 0; i < pending.size(); ++i) P.row(static_cast<Eigen::Index>(i)) = pending[i].transpose();

  gp::FitOptions fo;
  fo.restarts = static_cast<int>(o_.fit_restarts);
  fo.min_noise = o_.deterministic_objective ? 1e-9 : 1e-6;
  auto model = [&](const Eigen::MatrixXd& Xm, const Eigen::VectorXd& y, std::uint64_t key) {
    gp::Posterior post(Xm, y, cat, gp::fit_kernel(Xm, y, cat, fo, key));
    return post.believing(P);
  };
  // The objective(s), standardised; `rank` orders the trials for the optimiser's seeds.
  std::vector<gp::Posterior> objectives;
  Eigen::VectorXd rank = Eigen::VectorXd::Zero(n);
  double best = std::numeric_limits<double>::infinity();
  std::optional<gp::Ehvi> improvement;
  std::vector<Eigen::Index> front_rows;  ///< the feasible non-dominated trials, by the first objective
  if (!ehvi) {
    const Standardised ys = standardise(loss);
    objectives.push_back(model(X, ys.y, trial_key));
    rank = ys.y;
    for (Eigen::Index i = 0; i < n; ++i)
      if (feasible[static_cast<std::size_t>(i)]) best = std::min(best, ys.y(i));
  } else {
    std::vector<std::vector<double>> front, rows(static_cast<std::size_t>(n), std::vector<double>(n_objectives));
    for (std::size_t k = 0; k < n_objectives; ++k) {
      std::vector<double> col;
      for (const auto& l : losses) col.push_back(l[k]);
      const Standardised ys = standardise(col);
      objectives.push_back(model(X, ys.y, trial_key ^ fnv1a64("objective") ^ k));
      rank += ys.y;
      for (Eigen::Index i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)][k] = ys.y(i);
    }
    for (Eigen::Index i = 0; i < n; ++i)
      if (feasible[static_cast<std::size_t>(i)]) front.push_back(rows[static_cast<std::size_t>(i)]);
    const auto non_dominated = [](const std::vector<std::vector<double>>& pts) {
      std::vector<std::vector<double>> kept;  // fewer cells, the same volume
      for (const auto& a : pts) {
        bool dominated = false;
        for (const auto& b : pts) dominated = dominated || (b != a && dominates(b, a));
        if (!dominated && std::find(kept.begin(), kept.end(), a) == kept.end()) kept.push_back(a);
      }
      return kept;
    };
    if (!front.empty()) {
      // The reference: the feasible trials' worst in each objective, a tenth of their range
      // further (Optuna's GPSampler takes the worst of every trial too). Not the front's own
      // worst: a front of one point would leave a box of nothing to improve.
      std::vector<double> ref(n_objectives, -std::numeric_limits<double>::infinity());
      std::vector<double> low(n_objectives, std::numeric_limits<double>::infinity());
      for (const auto& p : front)
        for (std::size_t k = 0; k < n_objectives; ++k) ref[k] = std::max(ref[k], p[k]), low[k] = std::min(low[k], p[k]);
      for (std::size_t k = 0; k < n_objectives; ++k) ref[k] += std::max(0.1 * (ref[k] - low[k]), 1e-3);
      // Running trials count as found at their predicted losses (Kriging believer for the
      // front as for the model): the next proposal looks elsewhere.
      for (Eigen::Index i = 0; i < P.rows(); ++i) {
        std::vector<double> at(n_objectives);
        for (std::size_t k = 0; k < n_objectives; ++k) at[k] = objectives[k].predict(P.row(i).transpose()).first;
        front.push_back(at);
      }
      const auto kept = non_dominated(front);
      improvement.emplace(kept, ref);
      for (Eigen::Index i = 0; i < n; ++i) {
        const auto& r = rows[static_cast<std::size_t>(i)];
        if (feasible[static_cast<std::size_t>(i)] && std::find(kept.begin(), kept.end(), r) != kept.end())
          front_rows.push_back(i);
      }
      std::stable_sort(front_rows.begin(), front_rows.end(),
                       [&](auto a, auto b) { return rows[static_cast<std::size_t>(a)][0] < rows[static_cast<std::size_t>(b)][0]; });
      best = 0;  // some trial is feasible
    }
  }

  // One GP per constraint over the trials that report it; feasible below the standardised 0.
  struct ConstraintModel {
    gp::Posterior post;
    double threshold;
  };
  std::vector<ConstraintModel> cms;
  if (history.constrained) {
    std::size_t m = 0;
    for (const auto& c : constraints) m = std::max(m, c.size());
    for (std::size_t k = 0; k < m; ++k) {
      std::vector<double> v;
      std::vector<Eigen::Index> rows;
      for (std::size_t i = 0; i < constraints.size(); ++i)
        if (constraints[i].size() > k && std::isfinite(constraints[i][k])) {
          v.push_back(constraints[i][k]);
          rows.push_back(static_cast<Eigen::Index>(i));
        }
      if (v.empty()) continue;
      Eigen::MatrixXd Xc(static_cast<Eigen::Index>(rows.size()), d);
      for (std::size_t i = 0; i < rows.size(); ++i) Xc.row(static_cast<Eigen::Index>(i)) = X.row(rows[i]);
      const Standardised cs = standardise(v);
      cms.push_back({model(Xc, cs.y, trial_key ^ fnv1a64("constraint") ^ k), (0.0 - cs.mean) / cs.sd});
    }
  }
  const bool any_feasible = std::isfinite(best);
  std::vector<double> mus(n_objectives), sds(n_objectives);
  auto acquisition = [&](const Eigen::VectorXd& x) {
    double a = 0;
    if (any_feasible && improvement) {
      for (std::size_t k = 0; k < n_objectives; ++k) {
        const auto [mu, var] = objectives[k].predict(x);
        mus[k] = mu;
        sds[k] = std::sqrt(std::max(var, 0.0));
      }
      a = std::log(std::max(improvement->expected(mus, sds), 1e-300));
    } else if (any_feasible) {
      const auto [mu, var] = objectives.front().predict(x);
      a = gp::log_ei(mu, var, best);
    }
    for (const auto& c : cms) {
      const auto [mu, var] = c.post.predict(x);
      a += gp::log_pof(mu, var, c.threshold);
    }
    return a;
  };
  // Seeds: the best trials so far.
  std::vector<Eigen::Index> order(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return rank(a) < rank(b); });
  std::vector<Eigen::VectorXd> seeds;
  for (std::size_t i = 0; i < std::min<std::size_t>(order.size(), 4); ++i) seeds.push_back(X.row(order[i]).transpose());
  // Several objectives: the trials of the front seed the search too (all of a front of up to
  // 31 trials; of a larger one every (size/16)-th, 16 to 24 spread along it): the acquisition is high along the whole front, not only near its best-ranked end.
  // Each also with one numeric parameter redrawn (8 copies): a front stuck in a corner of the
  // space (all of it at one parameter's bound) is left along a single coordinate, where the
  // acquisition's gradient at the corner is flat (BoTorch perturbs subsets of dimensions alike).
  SplitMix64 jitter(SplitMix64::mix(trial_key ^ fnv1a64("\x01" "front")));
  std::vector<Eigen::Index> numeric;
  for (std::size_t j = 0; j < enc.dims.size(); ++j)
    if (!enc.dims[j].categorical) numeric.push_back(static_cast<Eigen::Index>(j));
  for (std::size_t i = 0, count = front_rows.size(), step = std::max<std::size_t>(1, count / 16); i < count; i += step) {
    const Eigen::VectorXd at = X.row(front_rows[i]).transpose();
    seeds.push_back(at);
    for (int c = 0; c < 8 && !numeric.empty(); ++c) {
      Eigen::VectorXd moved = at;
      moved(numeric[static_cast<std::size_t>(jitter.next_below(numeric.size()))]) = jitter.next_unit();
      enc.snap(moved);
      seeds.push_back(moved);
    }
  }

  gp::AcquisitionOptions ao;
  ao.candidates = static_cast<int>(o_.candidates);
  ao.local_starts = static_cast<int>(o_.local_starts);
  SplitMix64 rng(SplitMix64::mix(trial_key ^ fnv1a64("\x01" "candidates")));
  const Eigen::VectorXd x = gp::maximize_acquisition(acquisition, box, seeds, ao, rng);
  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  for (std::size_t j = 0; j < enc.dims.size(); ++j) p[enc.dims[j].dim->name] = enc.value(j, x(static_cast<Eigen::Index>(j)));
  for (std::size_t i : sampling_order(space_)) {
    const Dimension& dim = space_.dims[i];
    if (dim.when.empty() || !is_active(dim, p)) continue;
    p[dim.name] = random_.draw(dim, number);
  }
  drop_inactive(space_, p);
  return p;
}

}  // namespace dlsweep::search
