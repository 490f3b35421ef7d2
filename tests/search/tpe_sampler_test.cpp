// TPE: startup trials are the random sampler's; then the search concentrates where the
// good trials are (and beats random on a smooth objective); the constant liar spreads
// parallel suggestions; conditional params are modelled on the trials that have them;
// the Parzen pieces (weights, quantile) are right.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "search/parzen_estimator.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"
#include "search/tpe_sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

std::unique_ptr<Sampler> tpe(const Space& s, std::uint64_t seed, json o = json::object()) {
  auto made = make_sampler("tpe", s, seed, o);
  REQUIRE(made.has_value());
  return std::move(*made);
}

// Best value after n sequential trials (maximise).
double best_after(Sampler& sampler, const Space&, int n, double (*f)(const Params&)) {
  History h;
  double best = -1e300;
  for (int i = 0; i < n; ++i) {
    auto p = *sampler.next(i, h);
    const double v = f(p);
    best = std::max(best, v);
    h.trials.push_back(complete(i, p, v));
  }
  return best;
}

double quadratic(const Params& p) {
  return -std::pow(std::log10(p["lr"].get<double>()) + 2.5, 2) - std::pow(p["x"].get<double>() - 0.3, 2);
}

}  // namespace

TEST_CASE("tpe: startup trials are exactly the random sampler's draws", "[search][tpe]") {
  const Space s = mixed_space();
  auto t = tpe(s, 9, {{"startup_trials", 6}});
  RandomSampler r(s, 9);
  History h;
  for (int i = 0; i < 6; ++i) {
    auto p = *t->next(i, h);
    CHECK(p == *r.next(i, h));
    h.trials.push_back(complete(i, p, objective(p)));
  }
  CHECK(*t->next(6, h) != *r.next(6, h));  // the model takes over
}

TEST_CASE("tpe beats random on a smooth objective (median over seeds)", "[search][tpe]") {
  Space s;
  s.dims = {dim_log("lr", 1e-5, 1.0), dim_uniform("x", 0, 1)};
  std::vector<double> gap;  // tpe best − random best
  for (std::uint64_t seed = 1; seed <= 7; ++seed) {
    auto t = tpe(s, seed);
    RandomSampler r(s, seed);
    gap.push_back(best_after(*t, s, 50, quadratic) - best_after(r, s, 50, quadratic));
  }
  std::sort(gap.begin(), gap.end());
  CHECK(gap[3] > 0);
}

TEST_CASE("tpe: the constant liar keeps parallel suggestions apart", "[search][tpe]") {
  Space s;
  s.dims = {dim_uniform("x", 0, 1)};
  // 30 finished trials: the best near x = 0.3. Then 8 running trials sit at 0.3 already.
  History h;
  for (int i = 0; i < 30; ++i) {
    const double x = (i + 0.5) / 30.0;
    h.trials.push_back(complete(i, {{"x", x}}, -std::abs(x - 0.3)));
  }
  for (int i = 30; i < 38; ++i) {
    TrialRecord t;
    t.number = i;
    t.params = {{"x", 0.3 + 0.002 * (i - 30)}};
    h.trials.push_back(t);
  }
  auto near = [&](bool liar) {
    auto sampler = tpe(s, 4, {{"constant_liar", liar}});
    int n = 0;
    for (int i = 38; i < 98; ++i) n += std::abs((*sampler->next(i, h))["x"].get<double>() - 0.31) < 0.02;
    return n;
  };
  CHECK(near(true) < near(false));
}

TEST_CASE("tpe: conditional params use only the trials that have them", "[search][tpe]") {
  Space s;
  s.dims = {dim_choice("optimizer", {"sgd", "lars"})};
  Dimension trust = dim_log("trust", 1e-4, 1e-1);
  trust.when = {{"optimizer", {"lars"}}};
  s.dims.push_back(trust);
  History h;
  // lars with trust near 1e-3 wins; sgd is mediocre.
  for (int i = 0; i < 40; ++i) {
    if (i % 2) {
      const double tr = std::pow(10.0, -4 + 3.0 * (i / 40.0));
      h.trials.push_back(complete(i, {{"optimizer", "lars"}, {"trust", tr}}, 1 - std::abs(std::log10(tr) + 3)));
    } else {
      h.trials.push_back(complete(i, {{"optimizer", "sgd"}}, 0.0));
    }
  }
  auto sampler = tpe(s, 2);
  int lars = 0, near = 0;
  for (int i = 40; i < 80; ++i) {
    auto p = *sampler->next(i, h);
    CHECK(p.contains("trust") == (p["optimizer"] == "lars"));
    if (p["optimizer"] == "lars") {
      ++lars;
      near += std::abs(std::log10(p["trust"].get<double>()) + 3) < 0.7;
    }
  }
  CHECK(lars > 25);
  CHECK(near > lars / 2);
}

TEST_CASE("tpe: multivariate draws the unconditional dims jointly", "[search][tpe]") {
  Space s;
  s.dims = {dim_uniform("a", 0, 1), dim_uniform("b", 0, 1)};
  // Good trials lie on the diagonal a == b in two clusters (0.2,0.2) and (0.8,0.8); an
  // independent model would also propose (0.2,0.8). (Equal-mass scoring for both: the
  // univariate equal-height default goes for one cluster's peak in every dimension, which
  // lands on the diagonal too, for another reason.)
  History h;
  SplitMix64 rng(3);
  for (int i = 0; i < 200; ++i) {
    const double a = rng.next_unit(), b = rng.next_unit();
    const double v = -std::min(std::hypot(a - 0.2, b - 0.2), std::hypot(a - 0.8, b - 0.8));
    h.trials.push_back(complete(i, {{"a", a}, {"b", b}}, v));
  }
  auto off_diagonal = [&](bool multi) {
    auto sampler = tpe(s, 5, {{"multivariate", multi}, {"equal_height", false}});
    int n = 0;
    for (int i = 200; i < 300; ++i) {
      auto p = *sampler->next(i, h);
      n += std::abs(p["a"].get<double>() - p["b"].get<double>()) > 0.4;
    }
    return n;
  };
  CHECK(off_diagonal(true) < off_diagonal(false));
}

TEST_CASE("parzen: Optuna's default weights and the normal quantile", "[search][tpe]") {
  auto w = component_log_weights(3, 1.0);
  REQUIRE(w.size() == 4);
  for (double x : w) CHECK(std::exp(x) == Approx(0.25));
  auto ramp = component_log_weights(30, 1.0);
  CHECK(std::exp(ramp[0]) < std::exp(ramp[4]));  // the oldest weigh least
  CHECK(std::exp(ramp[29]) == Approx(std::exp(ramp[25])));
  double sum = 0;
  for (double x : ramp) sum += std::exp(x);
  CHECK(sum == Approx(1.0));
  CHECK(normal_quantile(0.5) == Approx(0.0).margin(1e-12));
  CHECK(normal_quantile(0.975) == Approx(1.959963984540054).epsilon(1e-12));
  CHECK(normal_quantile(1e-10) == Approx(-6.361340902404056).epsilon(1e-9));
}

// The mixture density against Optuna's _ParzenEstimator.log_pdf on the same observations
// (prior on, magic clip on, endpoints off; values computed with Debian's Optuna 3.1 with
// its truncated-normal log density fixed as upstream did in 3.5, optuna#5109/#5110 —
// 3.1 leaves out -log(sigma), see bench/optuna_quality.py). Log ints: dlsweep scores a
// value by its cell's mass, Optuna 3.1 by the density in log space; the two differ by the
// cell's log width, log((v + 0.5) / (v - 0.5)).
TEST_CASE("parzen: the mixture density equals Optuna's (fixed) on the same observations", "[search][tpe]") {
  auto log_density = [](const Dimension& d, const std::vector<double>& obs, double at) {
    const InternalDim id(d);
    std::vector<double> x;
    for (double o : obs) x.push_back(*id.to_internal(o));
    const Kernels k(id, x, KernelOptions{1.0, true, false, 1});
    const auto w = component_log_weights(x.size(), 1.0);
    std::vector<double> t;
    for (std::size_t i = 0; i < w.size(); ++i) t.push_back(w[i] + k.log_k(i, *id.to_internal(at)));
    return log_sum_exp(t);
  };
  Dimension f;
  f.name = "x";
  f.kind = Dimension::Kind::uniform;
  f.low = -5;
  f.high = 10;
  const std::vector<double> obs = {-3.0, 2.5, 9.0, 0.1};
  CHECK(log_density(f, obs, -4) == Approx(-2.79557325).epsilon(1e-8));
  CHECK(log_density(f, obs, 0) == Approx(-2.40135695).epsilon(1e-8));
  CHECK(log_density(f, obs, 3.14) == Approx(-2.50731250).epsilon(1e-8));
  CHECK(log_density(f, obs, 9.5) == Approx(-3.32946917).epsilon(1e-8));
  f.low = 0;
  f.high = 1;
  std::vector<double> thirty;  // 30 observations: magic clip binds for most kernels
  for (int i = 0; i < 30; ++i) thirty.push_back(std::pow(0.05 + 0.9 * i / 29.0, 2));
  CHECK(log_density(f, thirty, 0.1) == Approx(0.65318444).epsilon(1e-7));
  CHECK(log_density(f, thirty, 0.5) == Approx(-0.16681715).epsilon(1e-7));
  CHECK(log_density(f, thirty, 0.9) == Approx(-0.74369381).epsilon(1e-7));
  Dimension li;
  li.name = "batch_size";
  li.kind = Dimension::Kind::int_range;
  li.int_low = 256;
  li.int_high = 65536;
  li.log = true;
  const std::vector<double> bs = {256, 1024, 4096};
  for (auto [v, optuna] : {std::pair{300.0, -1.39298324}, {2000.0, -1.40852530}, {60000.0, -3.03973737}})
    CHECK(log_density(li, bs, v) == Approx(optuna + std::log(std::log((v + 0.5) / (v - 0.5)))).epsilon(1e-6));
}
