// tpe_sampler.cpp — the below/above split and the candidate search, per dimension or
// jointly.
#include "search/tpe_sampler.hpp"

#include "common/hash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "search/conditional.hpp"
#include "search/pareto.hpp"
#include "search/parzen_estimator.hpp"

namespace dlsweep::search {

TpeOptions TpeOptions::read(OptionReader& r) {
  TpeOptions o;
  o.startup_trials = r.integer("startup_trials", o.startup_trials, 0, 1'000'000);
  o.ei_candidates = r.integer("ei_candidates", o.ei_candidates, 1, 10'000);
  o.gamma = r.number("gamma", o.gamma, 0.0, 1.0, /*low_open=*/true);
  o.gamma_cap = r.integer("gamma_cap", o.gamma_cap, 1, 1'000'000);
  o.prior_weight = r.number("prior_weight", o.prior_weight, 0.0, 1e6, /*low_open=*/true);
  o.multivariate_given = r.has("multivariate");
  o.equal_height_given = r.has("equal_height");
  o.multivariate = r.boolean("multivariate", o.multivariate);
  o.constant_liar = r.boolean("constant_liar", o.constant_liar);
  o.equal_height = r.boolean("equal_height", !o.multivariate);
  o.startup_qmc = read_startup(r);
  return o;
}

TpeSampler::TpeSampler(Space space, std::uint64_t seed, TpeOptions options)
    : space_(std::move(space)), seed_(seed), o_(options), startup_(space_, seed) {
  if (qmc_fits(space_)) qmc_startup_.emplace(space_, seed, /*scramble=*/true);
}

namespace {

struct Split {
  std::vector<const TrialRecord*> below, above;  ///< each in trial-number order
  /// Several objectives: each "below" trial's kernel weight (by trial number), Optuna 3.1's
  /// _calculate_weights_below_for_multi_objective; empty: the usual weights.
  std::map<std::int64_t, double> below_weight;
};

// Optuna 3.1's weights of the "below" kernels with several objectives: each trial's
// hypervolume contribution among the "below" trials (reference 1.1 x their worst point),
// divided by the largest; one trial: 1.
std::map<std::int64_t, double> below_weights(const std::vector<const TrialRecord*>& below, const History& h) {
  std::map<std::int64_t, double> out;
  std::vector<Losses> pts;
  std::vector<const TrialRecord*> with;
  for (auto* t : below)
    if (auto l = to_losses(*t, h)) { pts.push_back(*l); with.push_back(t); }
  if (pts.empty()) return out;
  if (pts.size() == 1) { out[with[0]->number] = 1.0; return out; }
  Losses ref = pts[0];
  for (const auto& q : pts)
    for (std::size_t k = 0; k < ref.size(); ++k) ref[k] = std::max(ref[k], q[k]);
  for (auto& r : ref) r = r == 0 ? 1e-12 : std::max(1.1 * r, 0.9 * r);
  const double all = hypervolume(pts, ref);
  std::vector<double> contribution(pts.size());
  double top = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    auto rest = pts;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    contribution[i] = all - hypervolume(rest, ref);
    top = std::max(top, contribution[i]);
  }
  for (std::size_t i = 0; i < pts.size(); ++i)
    out[with[i]->number] = top > 0 ? std::clamp(contribution[i] / top, 0.0, 1.0) : 1.0;
  return out;
}

// The best value reported in a curve (what a pruned trial reached), or its final value.
std::optional<double> best_of(const TrialRecord& t, const History& h) {
  std::optional<double> best = t.value;
  for (const auto& p : t.curve)
    if (!std::isnan(p.value) && (!best || h.better(p.value, *best))) best = p.value;
  return best;
}

// A finished trial's total constraint violation; a COMPLETE trial of a constrained study
// whose constraints are unknown counts as infinitely infeasible.
double violation_of(const TrialRecord& t, const History& h) {
  if (h.constrained && t.constraints.empty()) return t.status == TrialStatus::complete ? std::numeric_limits<double>::infinity() : 0.0;
  return total_violation(t.constraints);
}

// Several objectives (Ozaki et al. 2020, Optuna 3.1's MOTPE split): the feasible COMPLETE
// trials by non-domination rank, whole fronts while they fit, the front that does not fit
// cut by greedy hypervolume contribution; then infeasible ones by violation. PRUNED trials
// count towards startup but go "above".
std::vector<const TrialRecord*> multi_objective_order(const std::vector<const TrialRecord*>& complete, const History& h,
                                                      std::size_t n_below) {
  std::vector<const TrialRecord*> feasible, infeasible;
  for (auto* t : complete) (violation_of(*t, h) > 0 ? infeasible : feasible).push_back(t);
  std::vector<Losses> pts;
  for (auto* t : feasible) pts.push_back(*to_losses(*t, h));
  std::vector<const TrialRecord*> out;
  std::vector<bool> used(feasible.size(), false);
  for (const auto& front : non_dominated_sort(pts)) {
    if (out.size() >= n_below) break;
    if (out.size() + front.size() <= n_below) {
      for (std::size_t i : front) { out.push_back(feasible[i]); used[i] = true; }
      continue;
    }
    std::vector<Losses> fp;
    for (std::size_t i : front) fp.push_back(pts[i]);
    Losses ref = fp[0];
    for (const auto& q : fp)
      for (std::size_t k = 0; k < ref.size(); ++k) ref[k] = std::max(ref[k], q[k]);
    for (auto& r : ref) r = r == 0 ? 1e-12 : std::max(1.1 * r, 0.9 * r);
    for (std::size_t j : select_by_hypervolume(fp, n_below - out.size(), ref)) {
      out.push_back(feasible[front[j]]);
      used[front[j]] = true;
    }
  }
  for (std::size_t i = 0; i < feasible.size(); ++i)
    if (!used[i]) out.push_back(feasible[i]);
  std::stable_sort(infeasible.begin(), infeasible.end(), [&](auto* a, auto* b) { return violation_of(*a, h) < violation_of(*b, h); });
  out.insert(out.end(), infeasible.begin(), infeasible.end());
  return out;
}

Split split(const History& h, const TpeOptions& o, std::size_t& n_finished) {
  std::vector<std::pair<const TrialRecord*, double>> complete, pruned_v;
  std::vector<const TrialRecord*> running, complete_mo, pruned_mo;
  const bool multi = h.multi_objective();
  for (const auto& t : h.trials) {
    if (multi) {
      if (t.status == TrialStatus::complete && to_losses(t, h)) complete_mo.push_back(&t);
      else if (t.status == TrialStatus::pruned || t.status == TrialStatus::complete) pruned_mo.push_back(&t);  // no value: "above"
      else if (t.status == TrialStatus::running && o.constant_liar) running.push_back(&t);
      continue;
    }
    if (t.status == TrialStatus::complete && t.value && !std::isnan(*t.value)) complete.push_back({&t, *t.value});
    else if (t.status == TrialStatus::pruned) {
      if (auto b = best_of(t, h)) pruned_v.push_back({&t, *b});
    } else if (t.status == TrialStatus::running && o.constant_liar) running.push_back(&t);
  }
  n_finished = multi ? complete_mo.size() + pruned_mo.size() : complete.size() + pruned_v.size();
  const std::size_t n = n_finished + running.size();
  std::size_t n_below = std::min<std::size_t>(static_cast<std::size_t>(std::ceil(o.gamma * double(n))),
                                              static_cast<std::size_t>(o.gamma_cap));
  Split s;
  auto by_number = [](const TrialRecord* a, const TrialRecord* b) { return a->number < b->number; };
  if (multi) {
    std::sort(complete_mo.begin(), complete_mo.end(), by_number);
    for (auto* t : multi_objective_order(complete_mo, h, n_below)) (s.below.size() < n_below ? s.below : s.above).push_back(t);
    for (auto* t : pruned_mo) s.above.push_back(t);
    for (auto* t : running) s.above.push_back(t);
    std::sort(s.below.begin(), s.below.end(), by_number);
    std::sort(s.above.begin(), s.above.end(), by_number);
    s.below_weight = below_weights(s.below, h);
    return s;
  }
  const double sign = h.maximize ? -1.0 : 1.0;  // ascending sign·value = best first
  std::sort(complete.begin(), complete.end(), [&](const auto& a, const auto& b) {
    return sign * a.second != sign * b.second ? sign * a.second < sign * b.second : a.first->number < b.first->number;
  });
  auto last_pos = [](const TrialRecord* t) { return t->curve.empty() ? 0.0 : t->curve.back().step + t->curve.back().epoch; };
  std::sort(pruned_v.begin(), pruned_v.end(), [&](const auto& a, const auto& b) {
    const double pa = last_pos(a.first), pb = last_pos(b.first);
    if (pa != pb) return pa > pb;  // further is better
    if (a.second != b.second) return sign * a.second < sign * b.second;
    return a.first->number < b.first->number;
  });
  std::vector<const TrialRecord*> ordered;
  for (const auto& [t, v] : complete) ordered.push_back(t);
  for (const auto& [t, v] : pruned_v) ordered.push_back(t);
  if (h.constrained) {  // Optuna's constraints: feasible first (in their order), then by total violation
    std::stable_partition(ordered.begin(), ordered.end(), [&](auto* t) { return violation_of(*t, h) <= 0; });
    auto first_bad = std::find_if(ordered.begin(), ordered.end(), [&](auto* t) { return violation_of(*t, h) > 0; });
    std::stable_sort(first_bad, ordered.end(), [&](auto* a, auto* b) { return violation_of(*a, h) < violation_of(*b, h); });
  }
  for (auto* t : ordered) (s.below.size() < n_below ? s.below : s.above).push_back(t);
  for (auto* t : running) s.above.push_back(t);
  std::sort(s.below.begin(), s.below.end(), by_number);
  std::sort(s.above.begin(), s.above.end(), by_number);
  return s;
}

// Internal coordinates of `dims` for each trial that has all of them.
std::vector<std::vector<double>> observations(const std::vector<const TrialRecord*>& trials,
                                              const std::vector<InternalDim>& dims,
                                              std::vector<std::int64_t>* kept = nullptr) {
  std::vector<std::vector<double>> out(dims.size());
  for (const auto* t : trials) {
    std::vector<double> row;
    for (const auto& d : dims) {
      auto it = t->params.find(d.dim->name);
      if (it == t->params.end()) break;
      auto x = d.to_internal(*it);
      if (!x) break;
      row.push_back(*x);
    }
    if (row.size() != dims.size()) continue;
    if (kept) kept->push_back(t->number);
    for (std::size_t j = 0; j < dims.size(); ++j) out[j].push_back(row[j]);
  }
  return out;
}

// l and g over `dims` jointly (one dim = univariate), and the chosen internal point.
std::vector<double> choose(const std::vector<InternalDim>& dims, const Split& s, const TpeOptions& o, bool multivariate,
                           SplitMix64& rng) {
  std::vector<std::int64_t> kept_l;
  const auto obs_l = observations(s.below, dims, &kept_l), obs_g = observations(s.above, dims);
  KernelOptions ko{o.prior_weight, true, multivariate, dims.size()};
  std::vector<Kernels> kl, kg;
  kl.reserve(dims.size());
  kg.reserve(dims.size());
  for (std::size_t j = 0; j < dims.size(); ++j) {
    kl.emplace_back(dims[j], obs_l[j], ko);
    kg.emplace_back(dims[j], obs_g[j], ko);
  }
  auto wl = component_log_weights(obs_l[0].size(), o.prior_weight);
  if (!s.below_weight.empty()) {  // several objectives: hypervolume-contribution weights, then the prior
    std::vector<double> w;
    for (auto n : kept_l) w.push_back(s.below_weight.contains(n) ? s.below_weight.at(n) : 0.0);
    w.push_back(o.prior_weight);
    double sum = 0;
    for (double x : w) sum += x;
    for (std::size_t i = 0; i < w.size(); ++i) wl[i] = std::log(w[i] / sum);
  }
  const auto wg = component_log_weights(obs_g[0].size(), o.prior_weight);
  const auto sl = o.equal_height ? height_log_weights(kl, wl) : wl;
  const auto sg = o.equal_height ? height_log_weights(kg, wg) : wg;
  // Categorical, univariate: the mixtures collapse to two probability vectors.
  const bool cat1 = dims.size() == 1 && dims[0].categorical;
  std::vector<double> pl, pg;
  if (cat1) {
    pl = kl[0].mixture_pmf(wl);
    pg = kg[0].mixture_pmf(wg);
  }
  std::vector<double> cum_l(wl.size());
  double acc = 0;
  for (std::size_t i = 0; i < wl.size(); ++i) cum_l[i] = acc += std::exp(wl[i]);
  std::vector<double> terms;
  std::vector<Kernels::Point> pts(dims.size());
  auto log_density = [&](const std::vector<Kernels>& k, const std::vector<double>& w, const std::vector<double>& x) {
    for (std::size_t j = 0; j < x.size(); ++j) pts[j] = k[j].point(x[j]);
    terms.resize(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      double t = w[i];
      for (std::size_t j = 0; j < x.size(); ++j) t += k[j].log_k(i, pts[j]);
      terms[i] = t;
    }
    return log_sum_exp(terms);
  };
  std::vector<double> best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t c = 0; c < o.ei_candidates; ++c) {
    const double u = rng.next_unit() * acc;
    const std::size_t comp = std::min<std::size_t>(
        wl.size() - 1, static_cast<std::size_t>(std::upper_bound(cum_l.begin(), cum_l.end(), u) - cum_l.begin()));
    std::vector<double> x(dims.size());
    for (std::size_t j = 0; j < dims.size(); ++j) x[j] = kl[j].sample(comp, rng);
    double score;
    if (cat1) {
      const auto idx = static_cast<std::size_t>(x[0]);
      score = std::log(pl[idx]) - std::log(pg[idx]);
    } else {
      score = log_density(kl, sl, x) - log_density(kg, sg, x);
    }
    if (best.empty() || score > best_score) {
      best_score = score;
      best = std::move(x);
    }
  }
  return best;
}

}  // namespace

std::optional<Params> TpeSampler::next(std::int64_t number, const History& history) {
  TpeOptions o = o_;
  if (history.multi_objective() && !o.multivariate_given) {
    o.multivariate = true;
    if (!o.equal_height_given) o.equal_height = false;
  }
  std::size_t n_finished = 0;
  const Split s = split(history, o, n_finished);
  if (static_cast<std::int64_t>(n_finished) < o.startup_trials || n_finished == 0)
    return qmc_startup_ && o.startup_qmc.value_or(history.multi_objective()) ? qmc_startup_->next(number, history)
                                                                              : startup_.next(number, history);

  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  const std::uint64_t trial_key = SplitMix64::mix(SplitMix64::mix(seed_ ^ 0x7fe5a3b1ULL) ^ static_cast<std::uint64_t>(number));
  const auto order = sampling_order(space_);
  std::vector<bool> done(space_.dims.size(), false);
  if (o.multivariate) {
    std::vector<InternalDim> joint;
    std::vector<std::size_t> which;
    for (std::size_t i : order)
      if (space_.dims[i].when.empty()) {
        joint.emplace_back(space_.dims[i]);
        which.push_back(i);
      }
    if (!joint.empty()) {
      SplitMix64 rng(SplitMix64::mix(trial_key ^ fnv1a64("\x01joint")));
      const auto x = choose(joint, s, o, /*multivariate=*/true, rng);
      for (std::size_t j = 0; j < joint.size(); ++j) {
        p[space_.dims[which[j]].name] = joint[j].from_internal(x[j]);
        done[which[j]] = true;
      }
    }
  }
  for (std::size_t i : order) {
    if (done[i]) continue;
    const Dimension& d = space_.dims[i];
    if (!d.when.empty() && !is_active(d, p)) continue;
    SplitMix64 rng(SplitMix64::mix(trial_key ^ fnv1a64(d.name)));
    const std::vector<InternalDim> one{InternalDim(d)};
    p[d.name] = one[0].from_internal(choose(one, s, o, /*multivariate=*/false, rng)[0]);
  }
  return p;
}

}  // namespace dlsweep::search
