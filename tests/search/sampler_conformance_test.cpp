// Sampler conformance: every sampler of the registry, same checks. Same seed + history ->
// same params (whatever the history's order, on a fresh instance); params inside bounds,
// ints on their step, log ranges drawn in log space, choices from the list; conditional
// params present exactly when their condition holds; after a "kill -9" (a fresh sampler
// and the history as reloaded from the database, in another order) the next params are
// what the uninterrupted run drew; bad options refused with the key named.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "search/discovered.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

struct Case {
  std::string algorithm;
  json options;
  bool finite_only;
  bool generations = false;  ///< pbt: trial n needs the previous generation's results (ready())
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"grid", nullptr, true},
      {"random", nullptr, false},
      {"qmc", nullptr, false},
      {"qmc", {{"scramble", false}}, false},
      {"tpe", {{"startup_trials", 5}}, false},
      {"tpe", {{"startup_trials", 5}, {"multivariate", true}}, false},
      {"tpe", {{"startup_trials", 5}, {"constant_liar", false}, {"gamma", 0.25}}, false},
      {"nsga2", {{"population_size", 6}}, false},
      {"nsga2", {{"population_size", 8}, {"crossover_prob", 0.5}, {"mutation_prob", 0.2}, {"swapping_prob", 0.3}}, false},
      {"nsga2", {{"population_size", 6}, {"crossover", "blx_alpha"}}, false},
      {"nsga2", {{"population_size", 6}, {"crossover", "sbx"}, {"crossover_eta", 5}}, false},
      {"nsga2", {{"population_size", 6}, {"crossover", "vsbx"}}, false},
      {"nsga2", {{"population_size", 6}, {"crossover", "undx"}}, false},
      {"nsga2", {{"population_size", 6}, {"crossover", "spx"}, {"mutation_prob", 0.1}}, false},
      {"pbt", {{"population", 8}, {"generations", 20}, {"interval", {{"by", "epoch"}, {"every", 1}}},
               {"perturb", {{"lr", {0.8, 1.25}}, {"batch_size", {0.5, 2}}}}}, false, true},
      {"pbt", {{"population", 6}, {"generations", 20}, {"quantile", 0.5}, {"interval", {{"by", "step"}, {"every", 100}}},
               {"perturb", {{"batch_size", {0.5, 2}}}}}, true, true},
      {"gp", {{"startup_trials", 5}, {"candidates", 64}, {"local_starts", 1}, {"fit_restarts", 0}}, false},
      {"gp", {{"startup_trials", 5}, {"candidates", 64}, {"local_starts", 1}, {"fit_restarts", 0}, {"constant_liar", false}, {"startup", "qmc"}}, false},
      {"cmaes", nullptr, false},
      {"cmaes", {{"popsize", 4}, {"restart_strategy", "none"}}, false},
      {"auto", nullptr, false},
  };
  return all;
}

std::unique_ptr<Sampler> make(const Case& c, const Space& s, std::uint64_t seed) {
  auto made = make_sampler(c.algorithm, s, seed, c.options);
  REQUIRE(made.has_value());
  return std::move(*made);
}

double objective_any(const Params& p) {
  if (p.contains("lr")) return objective(p);
  return (p["optimizer"] == "lars" ? 1.0 : 0.0) + p["batch_size"].get<double>() / 256.0;
}

// How a trial that finishes gets its results (a single value by default).
void finish_single(TrialRecord& r) {
  r.status = TrialStatus::complete;
  r.value = objective_any(r.params);
}

// Runs `n` trials after the records of `start`: 3 in flight at a time (running in the
// history), the rest complete (`finish` fills their results). kill_at: before that trial a
// fresh sampler takes over and the history comes back from the database in another order.
std::vector<Params> run_from(const Case& c, const Space& s, std::uint64_t seed, int n, int kill_at, History h,
                             void (*finish)(TrialRecord&) = finish_single) {
  auto sampler = make(c, s, seed);
  std::vector<Params> drawn;
  for (int i = 0; i < n; ++i) {
    if (i == kill_at) {
      // kill -9: a fresh sampler; the history comes back from the database in id order
      // reversed and with its curves, nothing else.
      sampler = make(c, s, seed);
      std::reverse(h.trials.begin(), h.trials.end());
    }
    if (!sampler->ready(i, h))  // pbt: the engine waits for the running trials to finish
      for (auto& r : h.trials)
        if (r.status == TrialStatus::running) finish(r);
    REQUIRE(sampler->ready(i, h));
    auto p = sampler->next(i, h);
    if (!p) break;
    drawn.push_back(*p);
    TrialRecord t;
    t.number = i;
    t.params = *p;
    h.trials.push_back(t);
    // The trial started 3 trials ago finishes now.
    for (auto& r : h.trials)
      if (r.number == i - 3 && r.status == TrialStatus::running) finish(r);
  }
  return drawn;
}

std::vector<Params> run(const Case& c, const Space& s, std::uint64_t seed, int n, int kill_at = -1) {
  History h;
  h.maximize = true;
  return run_from(c, s, seed, n, kill_at, h);
}

void check_in_space(const Space& s, const Params& p) {
  for (const auto& [k, v] : s.fixed.items()) CHECK(p.at(k) == v);
  for (const auto& d : s.dims) {
    bool active = true;
    for (const auto& c : d.when)
      active = active && p.contains(c.param) && std::find(c.values.begin(), c.values.end(), p[c.param]) != c.values.end();
    INFO(d.name << " in " << p.dump());
    REQUIRE(p.contains(d.name) == active);
    if (!active) continue;
    const auto& v = p[d.name];
    switch (d.kind) {
      case Dimension::Kind::choice:
        CHECK(std::find(d.choices.begin(), d.choices.end(), v) != d.choices.end());
        break;
      case Dimension::Kind::uniform:
      case Dimension::Kind::log_uniform:
        REQUIRE(v.is_number_float());
        CHECK(v.get<double>() >= d.low);
        CHECK(v.get<double>() < d.high);
        break;
      case Dimension::Kind::int_range:
        REQUIRE(v.is_number_integer());
        CHECK(v.get<std::int64_t>() >= d.int_low);
        CHECK(v.get<std::int64_t>() <= d.int_high);
        CHECK((v.get<std::int64_t>() - d.int_low) % d.int_step == 0);
        break;
    }
  }
}

}  // namespace

TEST_CASE("conformance: same seed and history give the same params, on a fresh sampler", "[search][conformance]") {
  for (const auto& c : cases()) {
    INFO(c.algorithm << " " << c.options.dump());
    const Space s = c.finite_only ? finite_space() : mixed_space();
    const auto a = run(c, s, 7, 30);
    const auto b = run(c, s, 7, 30);
    REQUIRE(a.size() == b.size());
    CHECK(a == b);
    const bool seeded = c.algorithm != "grid" && !(c.options.is_object() && c.options.contains("scramble"));
    if (seeded) CHECK(run(c, s, 8, 30) != a);  // the seed matters
  }
}

TEST_CASE("conformance: history order does not matter", "[search][conformance]") {
  for (const auto& c : cases()) {
    INFO(c.algorithm << " " << c.options.dump());
    const Space s = c.finite_only ? finite_space() : mixed_space();
    auto sampler = make(c, s, 3);
    History h;
    for (int i = 0; i < 12; ++i) {
      auto p = *sampler->next(i, h);
      h.trials.push_back(complete(i, p, objective_any(p)));
    }
    History shuffled = h;
    std::rotate(shuffled.trials.begin(), shuffled.trials.begin() + 5, shuffled.trials.end());
    std::swap(shuffled.trials[0], shuffled.trials[7]);
    // (optionals compared: a grid may be exhausted at 12, the same whatever the history)
    CHECK(make(c, s, 3)->next(12, h) == make(c, s, 3)->next(12, shuffled));
  }
}

TEST_CASE("conformance: params are inside the space; conditions respected", "[search][conformance]") {
  for (const auto& c : cases()) {
    INFO(c.algorithm << " " << c.options.dump());
    const Space s = c.finite_only ? finite_space() : mixed_space();
    const auto drawn = run(c, s, 11, c.finite_only ? 12 : 80);
    CHECK(drawn.size() == (c.finite_only ? 12u : 80u));
    bool saw_child = false, saw_no_child = false;
    for (const auto& p : drawn) {
      check_in_space(s, p);
      (p.contains("trust") ? saw_child : saw_no_child) = true;
    }
    CHECK(saw_child);
    CHECK(saw_no_child);
  }
}

TEST_CASE("conformance: log ranges are drawn in log space before any model", "[search][conformance]") {
  Space s;
  s.dims = {dim_log("lr", 1e-6, 1.0), dim_int("w", 1, 10000, 1, true)};
  for (const auto& c : cases()) {
    if (c.finite_only || c.generations) continue;  // pbt: generation 0 is the random sampler's
    INFO(c.algorithm << " " << c.options.dump());
    auto sampler = make(c, s, 5);
    int below_1e3 = 0, w_below_100 = 0;
    const int n = 64;
    for (int i = 0; i < n; ++i) {  // empty history: tpe is still in its startup phase
      auto p = *sampler->next(i, History{});
      below_1e3 += p["lr"].get<double>() < 1e-3;
      w_below_100 += p["w"].get<std::int64_t>() < 100;
    }
    // Log-uniform: half the mass below 1e-3 (uniform would put 0.1% there).
    CHECK(below_1e3 > n / 4);
    CHECK(below_1e3 < 3 * n / 4);
    CHECK(w_below_100 > n / 4);
    CHECK(w_below_100 < 3 * n / 4);
  }
}

TEST_CASE("conformance: after kill -9 and resume the next params are the uninterrupted run's", "[search][conformance]") {
  for (const auto& c : cases()) {
    INFO(c.algorithm << " " << c.options.dump());
    const Space s = c.finite_only ? finite_space() : mixed_space();
    const int n = c.finite_only ? 12 : 40;
    const auto uninterrupted = run(c, s, 21, n);
    for (int kill_at : {1, 7, n / 2, n - 1}) {
      INFO("killed before trial " << kill_at);
      CHECK(run(c, s, 21, n, kill_at) == uninterrupted);
    }
  }
}

TEST_CASE("conformance: unknown and bad options are refused with their key", "[search][conformance]") {
  for (auto name : sampler_names()) {
    const std::string algo(name);
    auto bad = make_sampler(algo, finite_space(), 0, {{"no_such_option", 1}});
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().front().key == "no_such_option");
    CHECK_FALSE(bad.error().front().fix.empty());
  }
  auto unknown = make_sampler("bayes", finite_space(), 0);
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error().front().key == "algorithm");
  CHECK(unknown.error().front().fix.find("tpe") != std::string::npos);
  for (auto [key, value] : std::vector<std::pair<std::string, json>>{
           {"gamma", 0}, {"gamma", 1.5}, {"startup_trials", -1}, {"multivariate", "yes"}, {"ei_candidates", 0}}) {
    auto r = make_sampler("tpe", mixed_space(), 0, {{key, value}});
    INFO(key << "=" << value.dump());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().front().key == key);
  }
  auto grid_cont = make_sampler("grid", mixed_space(), 0);
  REQUIRE_FALSE(grid_cont.has_value());
  CHECK(grid_cont.error().front().what.find("lr") != std::string::npos);
}

// search.warm_start: an earlier study's COMPLETE trials enter the history with numbers < 0
// (engine/warm_start_load). The samplers that learn from the history must stay exact on
// resume with them (a fresh sampler, the history reloaded in another order: warm-start
// records first, as the engine puts them, then reversed) and must use them.
namespace {

History warm_history_of(const Space& s, int n) {
  auto earlier = *make_sampler("random", s, 99);
  History h;
  h.maximize = true;
  for (int i = 0; i < n; ++i) {
    auto p = *earlier->next(i, h);
    h.trials.push_back(complete(i - n, p, objective_any(p)));
  }
  return h;
}

std::vector<Params> run_warm(const Case& c, const Space& s, std::uint64_t seed, int n, int kill_at,
                             const History& warm) {
  return run_from(c, s, seed, n, kill_at, warm);
}

}  // namespace

TEST_CASE("conformance: warm-start records (numbers < 0) keep resume exact and change the proposals",
          "[search][conformance][warm_start]") {
  for (const auto& c : cases()) {
    if (!sampler_learns_from_history(c.algorithm)) continue;
    INFO(c.algorithm << " " << c.options.dump());
    const Space s = mixed_space();
    const History warm = warm_history_of(s, 24);
    const int n = 20;
    const auto uninterrupted = run_warm(c, s, 21, n, -1, warm);
    REQUIRE(uninterrupted.size() == std::size_t(n));
    for (const auto& p : uninterrupted) check_in_space(s, p);
    for (int kill_at : {1, 9, n - 1}) {
      INFO("killed before trial " << kill_at);
      CHECK(run_warm(c, s, 21, n, kill_at, warm) == uninterrupted);
    }
    // The earlier trials are used: trial 0 is no longer the cold start's (tpe is past its
    // startup trials; nsga2 breeds its first generation from them).
    CHECK(run_warm(c, s, 21, 1, -1, warm).front() != run_warm(c, s, 21, 1, -1, History{}).front());
  }
  CHECK(sampler_learns_from_history("tpe"));
  CHECK(sampler_learns_from_history("nsga2"));
  for (const char* learner : {"gp", "cmaes", "auto"}) CHECK(sampler_learns_from_history(learner));
  for (const char* other : {"grid", "random", "qmc"}) CHECK_FALSE(sampler_learns_from_history(other));
}

namespace {

// run() with two objectives (maximise objective_any, minimise the batch size) and one
// constraint (batch_size <= 512); a finished trial carries both values and its constraint.
void finish_constrained_mo(TrialRecord& r) {
  r.status = TrialStatus::complete;
  r.values = {objective_any(r.params), r.params["batch_size"].get<double>()};
  r.constraints = {r.params["batch_size"].get<double>() - 512.0};
}

std::vector<Params> run_constrained_mo(const Case& c, const Space& s, std::uint64_t seed, int n, int kill_at = -1) {
  History h;
  h.directions = {true, false};
  h.constrained = true;
  return run_from(c, s, seed, n, kill_at, h, finish_constrained_mo);
}

}  // namespace

TEST_CASE("conformance: with several objectives and constraints, resume after kill -9 draws the uninterrupted run's",
          "[search][conformance][multi]") {
  for (const auto& c : cases()) {
    if (c.algorithm != "tpe" && c.algorithm != "nsga2" && c.algorithm != "gp" && c.algorithm != "cmaes")
      continue;  // the samplers that read values and constraints
    INFO(c.algorithm << " " << c.options.dump());
    const Space s = mixed_space();
    const auto uninterrupted = run_constrained_mo(c, s, 33, 40);
    for (const auto& p : uninterrupted) check_in_space(s, p);
    for (int kill_at : {1, 9, 20, 39}) {
      INFO("killed before trial " << kill_at);
      CHECK(run_constrained_mo(c, s, 33, 40, kill_at) == uninterrupted);
    }
  }
}

// Define-by-run (search/discovered.hpp): a parameter the program discovers is drawn by the
// study's algorithm as a pure function of (seed, number, name, distribution, history), so
// resume and --add-trials answer the same; every draw lies inside the program's call.
namespace {

std::vector<std::pair<std::string, Distribution>> discovered_calls() {
  auto d = [](json j) { return *parse_distribution(j); };
  return {
      {"lr", d({{"type", "float"}, {"low", 1e-5}, {"high", 1e-1}, {"log", true}})},
      {"dropout", d({{"type", "float"}, {"low", 0.0}, {"high", 0.5}})},
      {"momentum", d({{"type", "float"}, {"low", 0.5}, {"high", 0.95}, {"step", 0.05}})},
      {"n_units", d({{"type", "int"}, {"low", 4}, {"high", 128}, {"log", true}})},
      {"layers", d({{"type", "int"}, {"low", 1}, {"high", 9}, {"step", 2}})},
      {"optimizer", d({{"type", "categorical"}, {"choices", {"Adam", "RMSprop", "SGD"}}})},
  };
}

// A history in which trials 0..n-1 asked every discovered name (values of an earlier draw).
History discovered_history(const Case& c, int n) {
  History h;
  for (int i = 0; i < n; ++i) {
    Params p = Params::object();
    for (const auto& [name, dist] : discovered_calls())
      p[name] = draw_discovered(c.algorithm, 11, c.options, name, dist, i, h);
    double v = p["lr"].get<double>() * 10 + p["n_units"].get<double>() / 100.0 + (p["optimizer"] == "SGD" ? 1.0 : 0.0);
    h.trials.push_back(complete(i, p, v));
  }
  return h;
}

}  // namespace

TEST_CASE("conformance: discovered parameters are drawn purely and inside the program's call", "[search][conformance]") {
  for (const auto& c : cases()) {
    INFO(c.algorithm << " " << c.options.dump());
    const History h = discovered_history(c, 14);
    History shuffled = h;
    std::reverse(shuffled.trials.begin(), shuffled.trials.end());  // as reloaded after kill -9
    std::rotate(shuffled.trials.begin(), shuffled.trials.begin() + 3, shuffled.trials.end());
    for (const auto& [name, dist] : discovered_calls()) {
      INFO(name);
      for (std::int64_t number : {14, 15, 40}) {
        const json a = draw_discovered(c.algorithm, 11, c.options, name, dist, number, h);
        CHECK(a == draw_discovered(c.algorithm, 11, c.options, name, dist, number, shuffled));
        CHECK(contains(dist, a));
        // The trial's own earlier record (a resumed trial in the history) does not change its draw.
        History with_self = h;
        Params self = Params::object();
        self[name] = a;
        with_self.trials.push_back(TrialRecord{number, self, TrialStatus::running, std::nullopt, {}, {}, {}});
        CHECK(a == draw_discovered(c.algorithm, 11, c.options, name, dist, number, with_self));
      }
      // Other trial numbers give other draws (before any model: a model over a small discrete
      // space may rightly propose its best value every time).
      std::set<std::string> seen;
      for (std::int64_t number = 0; number < 20; ++number)
        seen.insert(draw_discovered(c.algorithm, 11, c.options, name, dist, 100 + number, History{}).dump());
      CHECK(seen.size() > 1);
    }
  }
}
