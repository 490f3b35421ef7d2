// gp and cmaes as searches: they find what random does not, parallel trials are spread,
// constraints steer towards feasibility, the draws are pure in (seed, history).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "search/cmaes.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

Space quad_space() {
  Space s;
  s.dims = {dim_uniform("x", -5, 5), dim_log("lr", 1e-5, 1.0), dim_int("k", 1, 64)};
  return s;
}

// Minimum 0 at x = 1.3, lr = 1e-3, k = 20.
double quad(const Params& p) {
  return std::pow(p["x"].get<double>() - 1.3, 2) + std::pow(std::log10(p["lr"].get<double>()) + 3, 2) +
         std::pow((p["k"].get<double>() - 20) / 10.0, 2);
}

// The best loss after `n` sequential trials (minimising).
double best_after(const std::string& algo, const json& options, std::uint64_t seed, int n, History* out = nullptr) {
  auto s = std::move(*make_sampler(algo, quad_space(), seed, options));
  History h;
  h.maximize = false;
  double best = 1e300;
  for (int i = 0; i < n; ++i) {
    auto p = *s->next(i, h);
    const double v = quad(p);
    best = std::min(best, v);
    h.trials.push_back(complete(i, p, v));
  }
  if (out) *out = h;
  return best;
}

}  // namespace

TEST_CASE("gp: beats random on a smooth function within 30 trials", "[search][gp]") {
  int wins = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const double gp = best_after("gp", {{"candidates", 256}}, seed, 30);
    const double random = best_after("random", nullptr, seed, 30);
    wins += gp < random;
    CHECK(gp < 0.2);
  }
  CHECK(wins == 3);
}

TEST_CASE("cmaes: beats random on a smooth function within 80 trials", "[search][cmaes]") {
  int wins = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) wins += best_after("cmaes", nullptr, seed, 80) < best_after("random", nullptr, seed, 80);
  CHECK(wins >= 2);
}

TEST_CASE("gp: a running trial moves the next proposal away from it (Kriging believer)", "[search][gp]") {
  History h;
  best_after("gp", {{"candidates", 256}}, 5, 15, &h);
  h.maximize = false;
  auto s = std::move(*make_sampler("gp", quad_space(), 5, {{"candidates", 256}}));
  const Params first = *s->next(15, h);
  TrialRecord running;
  running.number = 15;
  running.params = first;
  h.trials.push_back(running);
  const Params second = *s->next(16, h);
  CHECK(second != first);
  // Without the liar the running trial is ignored: trial 16 proposes (nearly) what 15 did.
  auto plain = std::move(*make_sampler("gp", quad_space(), 5, {{"candidates", 256}, {"constant_liar", false}}));
  const Params blind = *plain->next(16, h);
  const double moved = std::abs(second["x"].get<double>() - first["x"].get<double>()) +
                       std::abs(std::log10(second["lr"].get<double>()) - std::log10(first["lr"].get<double>()));
  const double blind_moved = std::abs(blind["x"].get<double>() - first["x"].get<double>()) +
                             std::abs(std::log10(blind["lr"].get<double>()) - std::log10(first["lr"].get<double>()));
  CHECK(moved > blind_moved);
}

TEST_CASE("gp: with a constraint the proposals after startup are mostly feasible", "[search][gp]") {
  auto s = std::move(*make_sampler("gp", quad_space(), 3, {{"candidates", 256}}));
  History h;
  h.maximize = false;
  h.constrained = true;
  int feasible_late = 0;
  for (int i = 0; i < 30; ++i) {
    auto p = *s->next(i, h);
    TrialRecord t = complete(i, p, quad(p));
    t.constraints = {1.5 - p["x"].get<double>()};  // feasible when x >= 1.5 (the optimum is just outside)
    if (i >= 15) feasible_late += t.constraints[0] <= 0;
    h.trials.push_back(t);
  }
  CHECK(feasible_late >= 12);
}

TEST_CASE("gp and cmaes: the same seed and history give the same params; another seed others", "[search][gp][cmaes]") {
  for (const char* algo : {"gp", "cmaes"}) {
    INFO(algo);
    History a, b, c;
    best_after(algo, nullptr, 9, 16, &a);
    best_after(algo, nullptr, 9, 16, &b);
    best_after(algo, nullptr, 10, 16, &c);
    for (std::size_t i = 0; i < a.trials.size(); ++i) CHECK(a.trials[i].params == b.trials[i].params);
    CHECK(a.trials.back().params != c.trials.back().params);
  }
}

TEST_CASE("cmaes: the state converges on a sphere and IPOP's stop test fires", "[search][cmaes]") {
  Eigen::VectorXd mean = Eigen::VectorXd::Constant(3, 0.5);
  CmaState s(mean, 0.2);
  SplitMix64 rng(1);
  const Eigen::VectorXd target = (Eigen::VectorXd(3) << 0.3, 0.7, 0.6).finished();
  int gens = 0;
  const Eigen::VectorXd tol = Eigen::VectorXd::Constant(3, 1e-6);
  while (!s.should_stop(tol) && gens < 2000) {
    std::vector<std::pair<Eigen::VectorXd, double>> g;
    for (std::size_t i = 0; i < s.lambda(); ++i) {
      auto x = s.sample(rng);
      g.emplace_back(x, (x - target).squaredNorm());
    }
    s.tell(std::move(g));
    ++gens;
  }
  CHECK(gens < 2000);
  CHECK((s.mean() - target).norm() < 1e-4);
}

TEST_CASE("cmaes: finished warm-start trials (numbers < 0) set the first run's mean", "[search][cmaes]") {
  History warm;
  warm.maximize = false;
  auto r = std::move(*make_sampler("random", quad_space(), 77));
  for (int i = 0; i < 40; ++i) {
    auto p = *r->next(i, History{});
    warm.trials.push_back(complete(i - 40, p, quad(p)));
  }
  auto s = std::move(*make_sampler("cmaes", quad_space(), 4));
  double near_warm = 0, near_cold = 0;
  for (int i = 0; i < 10; ++i) {
    near_warm += std::abs(s->next(i, warm)->at("x").get<double>() - 1.3);
    near_cold += std::abs(s->next(i, History{})->at("x").get<double>() - 1.3);
  }
  CHECK(near_warm < near_cold);
}

TEST_CASE("cmaes: ints land on their step; a space with no numeric parameter is refused", "[search][cmaes]") {
  Space s;
  s.dims = {dim_int("batch", 32, 1024, 32), dim_int("w", 1, 1000, 1, true), dim_choice("opt", {"a", "b"})};
  auto c = std::move(*make_sampler("cmaes", s, 2));
  History h;
  for (int i = 0; i < 40; ++i) {
    auto p = *c->next(i, h);
    CHECK((p["batch"].get<std::int64_t>() - 32) % 32 == 0);
    CHECK(p["w"].get<std::int64_t>() >= 1);
    h.trials.push_back(complete(i, p, -std::abs(p["batch"].get<double>() - 512)));
  }
  Space only_choice;
  only_choice.dims = {dim_choice("opt", {"a", "b"})};
  auto bad = make_sampler("cmaes", only_choice, 0);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().front().fix.find("tpe") != std::string::npos);
  auto pop = make_sampler("cmaes", s, 0, {{"popsize", 1}});
  REQUIRE_FALSE(pop.has_value());
  CHECK(pop.error().front().key == "popsize");
  auto strat = make_sampler("cmaes", s, 0, {{"restart_strategy", "bipop"}});
  REQUIRE_FALSE(strat.has_value());
  CHECK(strat.error().front().key == "restart_strategy");
}
