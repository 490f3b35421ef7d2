// Discovered parameters (define-by-run, search/discovered.hpp) are steered by the study's
// constraints and objectives as declared ones are (issue 43): a sweep whose parameters come from
// suggest_* finds about as many feasible trials (as many trials near the Pareto front) as the
// same sweep with them declared in `space:`. Each check is a count over fixed seeds with a bar
// the draws before the fix miss by far, not one lucky seed.
//
// The constrained quadratic (the shape of Optuna's constrained example, written here): x in
// [-15, 30], y an int in [-15, 30], minimise x^2 + y, feasible when c0 = (x-5)^2 + y^2 - 25 <= 0
// (inside a disc of radius 5 about (5, 0)) and c1 = -(x-8)^2 - (y+3)^2 + 7.7 <= 0 (outside a
// small disc about (8, -3)): about 3% of the box.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "search/discovered.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

// suggest_float("x", -15, 30) and suggest_int("y", -15, 30), as the program sends them.
const Distribution kX = *parse_distribution({{"type", "float"}, {"low", -15.0}, {"high", 30.0}});
const Distribution kY = *parse_distribution({{"type", "int"}, {"low", -15}, {"high", 30}});

// The trial's record: value x^2 + y, both constraints.
TrialRecord evaluated(std::int64_t n, Params p) {
  const double x = p["x"].get<double>(), y = p["y"].get<double>();
  TrialRecord t = complete(n, p, x * x + y);
  t.constraints = {(x - 5) * (x - 5) + y * y - 25, -(x - 8) * (x - 8) - (y + 3) * (y + 3) + 7.7};
  return t;
}

enum class Where { declared, discovered, discovered_alone };

// Trials 0..trials-1 one at a time (each ends before the next is drawn, as max_concurrent: 1);
// the number of feasible trials among 10..trials-1. `declared`: the sampler over `space:`;
// `discovered`: x then y asked as the engine answers suggest_* (with the study's discovered
// distributions so far: x alone at trial 0's first call); `discovered_alone`: each name drawn
// without the others' distributions (what the engine passed before issue 43).
int feasible_late(const std::string& algorithm, const json& options, std::uint64_t seed, Where where, int trials) {
  History h;
  h.maximize = false;
  h.constrained = true;
  Space space;
  space.dims = {dim_uniform("x", -15, 30), dim_int("y", -15, 30)};
  auto made = make_sampler(algorithm, space, seed, options);
  REQUIRE(made.has_value());
  std::map<std::string, Distribution> known;
  int count = 0;
  for (std::int64_t n = 0; n < trials; ++n) {
    Params p = Params::object();
    if (where == Where::declared) {
      auto q = (*made)->next(n, h);
      REQUIRE(q.has_value());
      p = *q;
    } else if (where == Where::discovered_alone) {
      p["x"] = draw_discovered(algorithm, seed, options, "x", kX, n, h);
      p["y"] = draw_discovered(algorithm, seed, options, "y", kY, n, h);
    } else {
      known.emplace("x", kX);
      p["x"] = draw_discovered(algorithm, seed, options, "x", kX, n, h, known);
      known.emplace("y", kY);
      p["y"] = draw_discovered(algorithm, seed, options, "y", kY, n, h, known);
    }
    h.trials.push_back(evaluated(n, p));
    const auto& c = h.trials.back().constraints;
    if (n >= 10 && c[0] <= 0 && c[1] <= 0) ++count;
  }
  return count;
}

// The feasible trials among 10..39, summed over seeds 0..seeds-1.
int feasible_sum(const std::string& algorithm, const json& options, Where where, int seeds) {
  int s = 0;
  for (int seed = 0; seed < seeds; ++seed) s += feasible_late(algorithm, options, static_cast<std::uint64_t>(seed), where, 40);
  return s;
}

// Two objectives: minimise f1 = u and f2 = (1 - u)^2 + v over u, v in [0, 1]; the front is v = 0.
// The number of trials among 10..39 near the front's far half from f1's best (u > 0.5, v < 0.1).
int far_front(const std::string& algorithm, const json& options, std::uint64_t seed, Where where) {
  History h;
  h.maximize = false;
  h.directions = {false, false};
  Space space;
  space.dims = {dim_uniform("u", 0, 1), dim_uniform("v", 0, 1)};
  auto made = make_sampler(algorithm, space, seed, options);
  REQUIRE(made.has_value());
  const Distribution d = *parse_distribution({{"type", "float"}, {"low", 0.0}, {"high", 1.0}});
  const std::map<std::string, Distribution> known{{"u", d}, {"v", d}};
  int count = 0;
  for (std::int64_t n = 0; n < 40; ++n) {
    Params p = Params::object();
    if (where == Where::declared) {
      auto q = (*made)->next(n, h);
      REQUIRE(q.has_value());
      p = *q;
    } else {
      p["u"] = draw_discovered(algorithm, seed, options, "u", d, n, h, known);
      p["v"] = draw_discovered(algorithm, seed, options, "v", d, n, h, known);
    }
    const double u = p["u"].get<double>(), v = p["v"].get<double>();
    TrialRecord t = complete(n, p, u);  // the engine's value: the first objective's
    t.values = {u, (1 - u) * (1 - u) + v};
    h.trials.push_back(t);
    if (n >= 10 && u > 0.5 && v < 0.1) ++count;
  }
  return count;
}

int far_front_sum(const std::string& algorithm, const json& options, Where where, int seeds) {
  int s = 0;
  for (int seed = 0; seed < seeds; ++seed) s += far_front(algorithm, options, static_cast<std::uint64_t>(seed), where);
  return s;
}

struct Case {
  std::string algorithm;
  json options;
  int seeds, bar;
};

const json kGp = {{"startup_trials", 10}, {"candidates", 256}, {"local_starts", 2}, {"fit_restarts", 0}};

}  // namespace

// Before issue 43 tpe drew a discovered parameter from its independent model with the trials'
// constraint values dropped: to it every trial was feasible, so it chased x^2 + y towards
// y = -15. Feasible trials among 10..39 over seeds 0..15: declared 97; discovered 35 before
// the fix, 121 after.
TEST_CASE("discovered: constraints steer tpe's draws as for declared parameters", "[search][discovered][constraints]") {
  const int declared = feasible_sum("tpe", nullptr, Where::declared, 16);
  const int discovered = feasible_sum("tpe", nullptr, Where::discovered_alone, 16);
  INFO("declared " << declared << ", discovered " << discovered);
  CHECK(discovered >= 80);
  CHECK(discovered * 4 >= declared * 3);  // the declared sweep's league
}

TEST_CASE("discovered: univariate tpe over the study's discovered space draws what it draws alone", "[search][discovered]") {
  // Each name from its own model, so the other names' distributions change nothing.
  for (std::uint64_t seed = 0; seed < 3; ++seed)
    CHECK(feasible_late("tpe", nullptr, seed, Where::discovered, 30) ==
          feasible_late("tpe", nullptr, seed, Where::discovered_alone, 30));
}

// The joint samplers propose the whole discovered space from one point, with the constraints.
// Before issue 43 each drew a discovered parameter at random: gp 8 over seeds 0..7, cmaes 13 and
// multivariate tpe 35 over seeds 0..15. After: gp 174 (declared 205), cmaes 165 (155),
// multivariate tpe 120 (128). nsga2 is left out: over 40 trials it finds few feasible ones even
// declared (25; discovered 38 after, 13 before).
TEST_CASE("discovered: constraints steer gp, cmaes and multivariate tpe over the discovered space",
          "[search][discovered][constraints]") {
  const std::vector<Case> cases = {
      {"gp", kGp, 8, 100},
      {"cmaes", nullptr, 16, 80},
      {"tpe", {{"multivariate", true}}, 16, 80},
  };
  for (const auto& c : cases) {
    INFO(c.algorithm << " " << c.options.dump());
    const int discovered = feasible_sum(c.algorithm, c.options, Where::discovered, c.seeds);
    INFO("discovered " << discovered << " (declared " << feasible_sum(c.algorithm, c.options, Where::declared, c.seeds) << ")");
    CHECK(discovered >= c.bar);
  }
}

// Several objectives: the draws follow the Pareto front, not the first objective alone. Before
// issue 43 tpe ranked a discovered parameter by the first objective (0 trials on the far half
// over seeds 0..15), nsga2 and gp drew it at random (13 over seeds 0..15; 3 over seeds 0..7).
// After: tpe 64 (declared 57), nsga2 49 (41), gp 56 (57).
TEST_CASE("discovered: several objectives steer tpe, nsga2 and gp as for declared parameters", "[search][discovered]") {
  const std::vector<Case> cases = {
      {"tpe", nullptr, 16, 32},
      {"nsga2", {{"population_size", 10}}, 16, 30},
      {"gp", kGp, 8, 25},
  };
  for (const auto& c : cases) {
    INFO(c.algorithm << " " << c.options.dump());
    const int discovered = far_front_sum(c.algorithm, c.options, Where::discovered, c.seeds);
    INFO("discovered " << discovered << " (declared " << far_front_sum(c.algorithm, c.options, Where::declared, c.seeds) << ")");
    CHECK(discovered >= c.bar);
  }
}
