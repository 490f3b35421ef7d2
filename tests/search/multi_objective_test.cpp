// Several objectives and constraints in the samplers: NSGA-II and multi-objective TPE on
// ZDT1 (hypervolume beats random sampling, resume draws the same), and constraints on a
// function whose unconstrained optimum is infeasible. Every number is a pure function of
// the seeds: no clocks, no threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "search/pareto.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

constexpr int kDims = 5;

Space zdt_space() {
  Space s;
  for (int i = 0; i < kDims; ++i) s.dims.push_back(dim_uniform("x" + std::to_string(i), 0.0, 1.0));
  return s;
}

// ZDT1 (Zitzler, Deb, Thiele 2000), both minimised.
std::vector<double> zdt1(const Params& p) {
  const double f1 = p["x0"].get<double>();
  double sum = 0;
  for (int i = 1; i < kDims; ++i) sum += p["x" + std::to_string(i)].get<double>();
  const double g = 1 + 9.0 * sum / (kDims - 1);
  return {f1, g * (1 - std::sqrt(f1 / g))};
}

History two_min() {
  History h;
  h.directions = {false, false};
  return h;
}

// n trials, 2 in flight; returns the history at the end.
History optimise(const std::string& algo, const json& options, std::uint64_t seed, int n, int kill_at = -1,
                 std::vector<Params>* drawn = nullptr) {
  const Space s = zdt_space();
  auto sampler = std::move(*make_sampler(algo, s, seed, options));
  History h = two_min();
  for (int i = 0; i < n; ++i) {
    if (i == kill_at) {
      sampler = std::move(*make_sampler(algo, s, seed, options));
      std::reverse(h.trials.begin(), h.trials.end());
    }
    auto p = sampler->next(i, h);
    REQUIRE(p);
    if (drawn) drawn->push_back(*p);
    TrialRecord t;
    t.number = i;
    t.params = *p;
    h.trials.push_back(t);
    for (auto& r : h.trials)
      if (r.number == i - 2 && r.status == TrialStatus::running) {
        r.status = TrialStatus::complete;
        r.values = zdt1(r.params);
      }
  }
  for (auto& r : h.trials)
    if (r.status == TrialStatus::running) {
      r.status = TrialStatus::complete;
      r.values = zdt1(r.params);
    }
  return h;
}

double hv(const History& h) {
  std::vector<Losses> pts;
  for (const auto& t : h.trials)
    if (auto l = to_losses(t, h)) pts.push_back(*l);
  return hypervolume(pts, {1.1, 11});
}

double median_hv(const std::string& algo, const json& options, int n) {
  std::vector<double> v;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) v.push_back(hv(optimise(algo, options, seed, n)));
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

TEST_CASE("nsga2: beats random sampling on ZDT1 by hypervolume", "[search][nsga2]") {
  const double random = median_hv("random", nullptr, 200);
  const double nsga2 = median_hv("nsga2", {{"population_size", 20}}, 200);
  INFO("random " << random << " nsga2 " << nsga2);
  CHECK(nsga2 > random);
}

TEST_CASE("tpe: several objectives beat random sampling on ZDT1 by hypervolume", "[search][tpe][multi]") {
  const double random = median_hv("random", nullptr, 120);
  const double tpe = median_hv("tpe", {{"startup_trials", 10}}, 120);
  INFO("random " << random << " tpe " << tpe);
  CHECK(tpe > random);
}

TEST_CASE("tpe: several objectives sample jointly and start from Sobol points unless told otherwise", "[search][tpe][multi]") {
  // The defaults with several objectives are multivariate: true, equal_height: false,
  // startup: qmc; each can be set back, and one objective keeps the univariate defaults.
  std::vector<Params> dflt, spelled, univariate;
  optimise("tpe", {{"startup_trials", 10}}, 7, 30, -1, &dflt);
  optimise("tpe", {{"startup_trials", 10}, {"multivariate", true}, {"equal_height", false}, {"startup", "qmc"}}, 7, 30, -1,
           &spelled);
  optimise("tpe", {{"startup_trials", 10}, {"multivariate", false}, {"startup", "random"}}, 7, 30, -1, &univariate);
  CHECK(dflt == spelled);
  CHECK(dflt != univariate);
  auto qmc = std::move(*make_sampler("qmc", zdt_space(), 7));
  for (int i = 0; i < 10; ++i) CHECK(dflt[i] == *qmc->next(i, two_min()));
  // One objective: the first draws are the random sampler's, as before.
  auto tpe = std::move(*make_sampler("tpe", zdt_space(), 7));
  auto rnd = std::move(*make_sampler("random", zdt_space(), 7));
  CHECK(*tpe->next(0, History{}) == *rnd->next(0, History{}));
}

TEST_CASE("several objectives: resume after kill -9 draws the uninterrupted run's params", "[search][multi]") {
  for (auto [algo, options] : std::vector<std::pair<std::string, json>>{
           {"nsga2", {{"population_size", 6}}}, {"tpe", {{"startup_trials", 5}}}}) {
    INFO(algo);
    std::vector<Params> straight;
    optimise(algo, options, 4, 30, -1, &straight);
    for (int kill_at : {3, 13, 29}) {
      std::vector<Params> resumed;
      optimise(algo, options, 4, 30, kill_at, &resumed);
      CHECK(resumed == straight);
    }
  }
}

TEST_CASE("nsga2: generation 0 is the qmc sampler's draw, or with startup: random the random one's", "[search][nsga2]") {
  const Space s = zdt_space();
  auto nsga = std::move(*make_sampler("nsga2", s, 9, {{"population_size", 4}}));
  auto qmc = std::move(*make_sampler("qmc", s, 9));
  auto nsga_random = std::move(*make_sampler("nsga2", s, 9, {{"population_size", 4}, {"startup", "random"}}));
  auto rnd = std::move(*make_sampler("random", s, 9));
  for (int i = 0; i < 4; ++i) {
    CHECK(*nsga->next(i, two_min()) == *qmc->next(i, two_min()));
    CHECK(*nsga_random->next(i, two_min()) == *rnd->next(i, two_min()));
  }
  auto bad_startup = make_sampler("nsga2", s, 0, {{"startup", "sobol"}});
  REQUIRE_FALSE(bad_startup.has_value());
  CHECK(bad_startup.error().front().key == "startup");
  auto bad = make_sampler("nsga2", s, 0, {{"crossover_prob", 1.5}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().front().key == "crossover_prob");
  auto small = make_sampler("nsga2", s, 0, {{"population_size", 1}});
  REQUIRE_FALSE(small.has_value());
  CHECK(small.error().front().key == "population_size");
}

namespace {

// Minimise (x - 0.1)^2 + (y - 0.1)^2 subject to x + y >= 1: the unconstrained optimum
// (0.1, 0.1) is infeasible; the constrained one is (0.5, 0.5). constraint = 1 - x - y.
History constrained_run(const std::string& algo, const json& options, bool constrained, bool two_objectives,
                        std::uint64_t seed = 3) {
  Space s;
  s.dims = {dim_uniform("x", 0, 1), dim_uniform("y", 0, 1)};
  auto sampler = std::move(*make_sampler(algo, s, seed, options));
  History h;
  h.maximize = false;
  if (two_objectives) h.directions = {false, false};
  h.constrained = constrained;
  for (int i = 0; i < 120; ++i) {
    auto p = *sampler->next(i, h);
    const double x = p["x"].get<double>(), y = p["y"].get<double>();
    TrialRecord t = complete(i, p, std::pow(x - 0.1, 2) + std::pow(y - 0.1, 2));
    if (two_objectives) t.values = {x, y};
    if (constrained) t.constraints = {1 - x - y};
    h.trials.push_back(t);
  }
  return h;
}

int feasible_in_last(const History& h, int n) {
  int k = 0;
  for (std::size_t i = h.trials.size() - n; i < h.trials.size(); ++i) {
    const double x = h.trials[i].params["x"].get<double>(), y = h.trials[i].params["y"].get<double>();
    k += x + y >= 1;
  }
  return k;
}

}  // namespace

TEST_CASE("constraints: tpe searches the feasible region when the optimum is infeasible", "[search][constraints]") {
  const json o = {{"startup_trials", 10}};
  const int with = feasible_in_last(constrained_run("tpe", o, true, false), 40);
  const int without = feasible_in_last(constrained_run("tpe", o, false, false), 40);
  INFO("feasible of the last 40: constrained " << with << ", unconstrained " << without);
  CHECK(with >= 28);
  CHECK(without <= 8);
}

TEST_CASE("constraints: nsga2 and multi-objective tpe breed from feasible trials", "[search][constraints]") {
  for (auto [algo, options] : std::vector<std::pair<std::string, json>>{
           {"nsga2", {{"population_size", 20}}}, {"tpe", {{"startup_trials", 10}}}}) {
    INFO(algo);
    int with = 0, without = 0;  // over three seeds: one seed's 40 trials are a small sample
    for (std::uint64_t seed : {3, 4, 5}) {
      with += feasible_in_last(constrained_run(algo, options, true, true, seed), 40);
      without += feasible_in_last(constrained_run(algo, options, false, true, seed), 40);
    }
    INFO("feasible of the last 3 x 40: constrained " << with << ", unconstrained " << without);
    CHECK(with > without);
    CHECK(with > 2 * without);  // nsga2: mutation redraws 1 of the 2 params at random half the time
  }
}

TEST_CASE("gp: expected hypervolume improvement beats ParEGO and random sampling on ZDT1 within 40 trials",
          "[search][gp][multi]") {
  const json base = {{"startup_trials", 10}, {"candidates", 256}, {"local_starts", 2}, {"fit_restarts", 0}};
  json parego = base;
  parego["multi_objective"] = "parego";
  const double random = median_hv("random", nullptr, 40);
  const double by_parego = median_hv("gp", parego, 40);
  const double by_ehvi = median_hv("gp", base, 40);
  INFO("random " << random << " gp/parego " << by_parego << " gp/ehvi " << by_ehvi);
  CHECK(by_ehvi > random);
  CHECK(by_ehvi > by_parego);
}

TEST_CASE("gp: three objectives by expected hypervolume improvement stay pure and inside the space",
          "[search][gp][multi]") {
  Space s = zdt_space();
  const json o = {{"startup_trials", 4}, {"candidates", 64}, {"local_starts", 1}, {"fit_restarts", 0}};
  History h;
  h.directions = {false, false, false};
  for (int i = 0; i < 12; ++i) {
    auto a = std::move(*make_sampler("gp", s, 3, o));
    auto b = std::move(*make_sampler("gp", s, 3, o));
    auto p = a->next(i, h);
    REQUIRE(p);
    History reversed = h;
    std::reverse(reversed.trials.begin(), reversed.trials.end());
    CHECK(*b->next(i, reversed) == *p);  // the history's order does not matter
    for (int d = 0; d < kDims; ++d) {
      const double x = (*p)["x" + std::to_string(d)].get<double>();
      CHECK(x >= 0.0);
      CHECK(x <= 1.0);
    }
    TrialRecord t;
    t.number = i;
    t.params = *p;
    t.status = TrialStatus::complete;
    const auto f = zdt1(*p);
    t.values = {f[0], f[1], f[0] * f[0] + 0.5 * f[1]};
    h.trials.push_back(t);
  }
}
