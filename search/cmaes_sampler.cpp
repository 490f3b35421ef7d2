// cmaes_sampler.cpp — the history folded into a CMA-ES state, and one draw from it.
#include "search/cmaes_sampler.hpp"

#include "common/hash.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "search/cmaes.hpp"
#include "search/conditional.hpp"
#include "search/pareto.hpp"
#include "search/parzen_estimator.hpp"

namespace dlsweep::search {

CmaesOptions CmaesOptions::read(OptionReader& r) {
  CmaesOptions o;
  o.sigma0 = r.number("sigma0", o.sigma0, 0.0, 1.0, /*low_open=*/true);
  o.popsize = r.integer("popsize", o.popsize, 0, 100'000);
  if (r.has("popsize") && o.popsize == 1) r.error("popsize", "cmaes needs a population of at least 2", "set popsize: 2 or more, or leave it out for 4 + 3 ln n");
  o.ipop = r.word("restart_strategy", "ipop", {"ipop", "none"}) == "ipop";
  o.inc_popsize = r.number("inc_popsize", o.inc_popsize, 1.0, 100.0);
  o.warm_start_fraction = r.number("warm_start_fraction", o.warm_start_fraction, 0.0, 1.0, /*low_open=*/true);
  return o;
}

CmaesSampler::CmaesSampler(Space space, std::uint64_t seed, CmaesOptions options)
    : space_(std::move(space)), seed_(seed), o_(options), random_(space_, seed) {}

namespace {

struct Told {
  std::int64_t number;
  Eigen::VectorXd x;
  double loss;
  double violation;
};

// A generation's losses as CmaState wants them: infeasible after the feasible, by violation.
std::vector<std::pair<Eigen::VectorXd, double>> ranked(const std::vector<Told>& gen) {
  double worst = -std::numeric_limits<double>::infinity();
  for (const auto& t : gen)
    if (t.violation <= 0) worst = std::max(worst, t.loss);
  if (!std::isfinite(worst)) worst = 0;
  std::vector<std::pair<Eigen::VectorXd, double>> out;
  for (const auto& t : gen) out.emplace_back(t.x, t.violation > 0 ? worst + 1.0 + t.violation : t.loss);
  return out;
}

}  // namespace

std::optional<Params> CmaesSampler::next(std::int64_t number, const History& history) {
  std::vector<InternalDim> dims;
  for (std::size_t i : sampling_order(space_))
    if (space_.dims[i].when.empty() && space_.dims[i].kind != Dimension::Kind::choice) dims.emplace_back(space_.dims[i]);
  if (dims.empty()) return random_.next(number, history);
  const auto n = static_cast<Eigen::Index>(dims.size());

  std::vector<Told> warm, told;
  for (const auto& t : history.trials) {
    if (t.status != TrialStatus::complete || t.number == number) continue;
    double loss;
    if (history.multi_objective()) {
      auto l = to_losses(t, history);
      if (!l) continue;
      loss = l->front();
    } else {
      if (!t.value || !std::isfinite(*t.value)) continue;
      loss = history.maximize ? -*t.value : *t.value;
    }
    Eigen::VectorXd x(n);
    bool ok = true;
    for (Eigen::Index j = 0; j < n && ok; ++j) {
      auto it = t.params.find(dims[static_cast<std::size_t>(j)].dim->name);
      auto v = it == t.params.end() ? std::nullopt : dims[static_cast<std::size_t>(j)].to_internal(*it);
      ok = v.has_value();
      if (ok) x(j) = (*v - dims[static_cast<std::size_t>(j)].low) / (dims[static_cast<std::size_t>(j)].high - dims[static_cast<std::size_t>(j)].low);
    }
    if (!ok) continue;
    const double violation =
        history.constrained ? (t.constraints.empty() ? std::numeric_limits<double>::infinity() : total_violation(t.constraints)) : 0.0;
    (t.number < 0 ? warm : told).push_back({t.number, std::move(x), loss, violation});
  }
  auto by_number = [](const Told& a, const Told& b) { return a.number < b.number; };
  std::sort(warm.begin(), warm.end(), by_number);
  std::sort(told.begin(), told.end(), by_number);

  const std::size_t lambda0 = o_.popsize > 0 ? static_cast<std::size_t>(o_.popsize) : 0;
  CmaState state(Eigen::VectorXd::Constant(n, 0.5), o_.sigma0, lambda0);
  if (warm.size() >= 2) {  // the best of the earlier trials: their mean and spread
    std::stable_sort(warm.begin(), warm.end(), [](const Told& a, const Told& b) {
      return a.violation != b.violation ? a.violation < b.violation : a.loss < b.loss;
    });
    const auto k = std::max<std::size_t>(2, static_cast<std::size_t>(std::ceil(o_.warm_start_fraction * double(warm.size()))));
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(n);
    for (std::size_t i = 0; i < k; ++i) mean += warm[i].x / double(k);
    Eigen::MatrixXd cov = Eigen::MatrixXd::Identity(n, n) * 1e-4;
    for (std::size_t i = 0; i < k; ++i) cov += (warm[i].x - mean) * (warm[i].x - mean).transpose() / double(k);
    const double sigma = std::clamp(std::sqrt(cov.trace() / double(n)), 1e-3, 1.0);
    state = CmaState(mean, sigma, lambda0, cov / (sigma * sigma));
  }
  Eigen::VectorXd tol(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const auto c = dims[static_cast<std::size_t>(j)].dim->cardinality();
    tol(j) = c > 0 ? 0.2 / double(c) : 1e-8;
  }
  std::vector<Told> gen;
  std::uint64_t restart = 0;
  std::size_t lambda = state.lambda();
  for (auto& t : told) {
    gen.push_back(std::move(t));
    if (gen.size() < state.lambda()) continue;
    state.tell(ranked(gen));
    gen.clear();
    if (o_.ipop && state.should_stop(tol)) {
      ++restart;
      lambda = static_cast<std::size_t>(std::ceil(double(lambda) * o_.inc_popsize));
      SplitMix64 r(SplitMix64::mix(SplitMix64::mix(seed_ ^ 0x69706f70ULL) ^ restart));
      Eigen::VectorXd mean(n);
      for (Eigen::Index j = 0; j < n; ++j) mean(j) = r.next_unit();
      state = CmaState(mean, o_.sigma0, lambda);
    }
  }

  const std::uint64_t trial_key = SplitMix64::mix(SplitMix64::mix(seed_ ^ 0x636d6165ULL) ^ static_cast<std::uint64_t>(number));
  SplitMix64 rng(SplitMix64::mix(trial_key ^ fnv1a64("\x01joint")));
  const Eigen::VectorXd x = state.sample(rng);
  Params p = space_.fixed.is_object() ? space_.fixed : Params::object();
  for (Eigen::Index j = 0; j < n; ++j) {
    const auto& d = dims[static_cast<std::size_t>(j)];
    p[d.dim->name] = d.from_internal(d.low + x(j) * (d.high - d.low));
  }
  for (std::size_t i : sampling_order(space_)) {
    const Dimension& d = space_.dims[i];
    if (p.contains(d.name) || (!d.when.empty() && !is_active(d, p))) continue;
    p[d.name] = random_.draw(d, number);
  }
  drop_inactive(space_, p);
  return p;
}

}  // namespace dlsweep::search
