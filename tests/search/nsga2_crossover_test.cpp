// NSGA-II's crossover operators (search/nsga2_crossover.hpp, Optuna 3.1's BLX-alpha, SBX,
// vSBX, UNDX, SPX): the operators' distributions with fixed seeds, the transformed space
// (log ranges crossed in log space, ints onto their step), the sampler's children (inside
// the space, categoricals from a parent, a float below its low crossed again), determinism,
// and the option errors. The conformance suite (sampler_conformance_test.cpp) runs every
// operator through resume, history order and the space checks too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "search/nsga2_crossover.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

constexpr int kDraws = 20000;

CrossoverOptions kind(CrossoverKind k) {
  CrossoverOptions o;
  o.kind = k;
  return o;
}

std::vector<Vec> draws(const CrossoverOptions& o, const std::vector<Vec>& parents, const std::vector<Bounds>& bounds,
                       bool multi = true, std::uint64_t seed = 1) {
  SplitMix64 rng(seed);
  std::vector<Vec> out;
  for (int i = 0; i < kDraws; ++i) out.push_back(crossover_numerical(o, parents, bounds, multi, rng));
  return out;
}

double mean(const std::vector<Vec>& xs, std::size_t i) {
  double s = 0;
  for (const auto& x : xs) s += x[i];
  return s / double(xs.size());
}

double sd(const std::vector<Vec>& xs, std::size_t i) {
  const double m = mean(xs, i);
  double s = 0;
  for (const auto& x : xs) s += (x[i] - m) * (x[i] - m);
  return std::sqrt(s / double(xs.size()));
}

}  // namespace

TEST_CASE("nsga2 crossover: blx_alpha spreads uniformly over [min - alpha d, max + alpha d]", "[search][nsga2][crossover]") {
  const auto xs = draws(kind(CrossoverKind::blx_alpha), {{0.2}, {0.6}}, {{0, 1}});
  double lo = 1, hi = 0;
  int outside = 0;
  for (const auto& x : xs) {
    lo = std::min(lo, x[0]);
    hi = std::max(hi, x[0]);
    outside += x[0] < 0.2 || x[0] > 0.6;
  }
  CHECK(lo >= 0.0);  // 0.2 - 0.5 * 0.4
  CHECK(hi <= 0.8);
  CHECK(lo < 0.01);
  CHECK(hi > 0.79);
  CHECK(mean(xs, 0) == Approx(0.4).margin(0.01));
  CHECK(double(outside) / kDraws == Approx(0.5).margin(0.02));  // 0.4 of the 0.8 wide interval
  CrossoverOptions wide = kind(CrossoverKind::blx_alpha);
  wide.alpha = 0;
  for (const auto& x : draws(wide, {{0.2}, {0.6}}, {{0, 1}})) CHECK((x[0] >= 0.2 && x[0] <= 0.6));
}

TEST_CASE("nsga2 crossover: sbx children are symmetric around the parents' mean and inside the bounds", "[search][nsga2][crossover]") {
  for (bool multi : {false, true}) {
    INFO("multi " << multi);
    const auto xs = draws(kind(CrossoverKind::sbx), {{0.3}, {0.7}}, {{0, 1}}, multi);
    int below = 0, copies = 0, near = 0;
    for (const auto& x : xs) {
      CHECK((x[0] >= 0 && x[0] <= 1));
      below += x[0] < 0.5;
      copies += x[0] == 0.3 || x[0] == 0.7;
      near += std::abs(x[0] - 0.3) < 0.05 || std::abs(x[0] - 0.7) < 0.05;
    }
    CHECK(mean(xs, 0) == Approx(0.5).margin(0.01));
    CHECK(double(below) / kDraws == Approx(0.5).margin(0.02));
    CHECK(double(copies) / kDraws == Approx(0.5).margin(0.02));  // half the genes are a parent's
    // eta 20 (several objectives) keeps the crossed genes nearer the parents than eta 2.
    if (multi) CHECK(double(near) / kDraws > 0.9);
    else CHECK(double(near) / kDraws < 0.85);
  }
  CrossoverOptions o = kind(CrossoverKind::sbx);
  o.eta = 2;  // an explicit eta wins over the default of several objectives
  CHECK(draws(o, {{0.3}, {0.7}}, {{0, 1}}, true) == draws(kind(CrossoverKind::sbx), {{0.3}, {0.7}}, {{0, 1}}, false));
  // Parents at the bounds: the crossed genes stay inside.
  for (const auto& x : draws(kind(CrossoverKind::sbx), {{0.0}, {1.0}}, {{0, 1}}, false)) CHECK((x[0] >= 0 && x[0] <= 1));
}

TEST_CASE("nsga2 crossover: vsbx mixes parent copies and crossed genes around both parents", "[search][nsga2][crossover]") {
  const auto xs = draws(kind(CrossoverKind::vsbx), {{0.3}, {0.7}}, {{0, 1}}, false);
  int copies = 0, left = 0, right = 0;
  for (const auto& x : xs) {
    REQUIRE(std::isfinite(x[0]));
    copies += x[0] == 0.3 || x[0] == 0.7;
    left += x[0] < 0.5;
    right += x[0] > 0.5;
  }
  CHECK(double(copies) / kDraws == Approx(0.5).margin(0.02));
  CHECK(double(left) / kDraws == Approx(0.5).margin(0.03));
  CHECK(double(right) / kDraws == Approx(0.5).margin(0.03));
}

TEST_CASE("nsga2 crossover: undx centres on the first two parents, spread along and across their line", "[search][nsga2][crossover]") {
  // x1, x2 on the first axis; x3 at distance D = 1 from their line.
  const auto xs = draws(kind(CrossoverKind::undx), {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}}, {{-5, 5}, {-5, 5}, {-5, 5}});
  CHECK(mean(xs, 0) == Approx(0.5).margin(0.01));
  CHECK(mean(xs, 1) == Approx(0).margin(0.01));
  CHECK(mean(xs, 2) == Approx(0).margin(0.01));
  CHECK(sd(xs, 0) == Approx(0.25).epsilon(0.03));  // xi ~ N(0, sigma_xi^2), |d| = 1 (as Optuna: sigma^2 as the sd)
  const double se = 0.35 / std::sqrt(3.0);
  CHECK(sd(xs, 1) == Approx(se * se).epsilon(0.03));  // D * eta ~ N(0, sigma_eta^2)
  CHECK(sd(xs, 2) == Approx(se * se).epsilon(0.03));
  // One parameter: no sub-search component.
  for (const auto& x : draws(kind(CrossoverKind::undx), {{0.2}, {0.4}, {0.9}}, {{0, 1}})) REQUIRE(std::isfinite(x[0]));
  // Equal first parents: the child is their point plus the orthogonal spread only.
  const auto same = draws(kind(CrossoverKind::undx), {{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.9}}, {{0, 1}, {0, 1}});
  CHECK(sd(same, 0) == Approx(0).margin(1e-12));
  CHECK(sd(same, 1) > 0);
}

TEST_CASE("nsga2 crossover: spx samples the parents' simplex expanded by epsilon", "[search][nsga2][crossover]") {
  const std::vector<Vec> p = {{0, 0}, {1, 0}, {0, 1}};
  const auto xs = draws(kind(CrossoverKind::spx), p, {{0, 1}, {0, 1}});
  const double eps = 2;  // sqrt(2 + 2)
  const double g = 1.0 / 3;
  std::vector<Vec> v;
  for (const auto& x : p) v.push_back({g + eps * (x[0] - g), g + eps * (x[1] - g)});
  for (const auto& x : xs) {
    // Barycentric coordinates in the expanded triangle.
    const double det = (v[1][0] - v[0][0]) * (v[2][1] - v[0][1]) - (v[2][0] - v[0][0]) * (v[1][1] - v[0][1]);
    const double l1 = ((x[0] - v[0][0]) * (v[2][1] - v[0][1]) - (v[2][0] - v[0][0]) * (x[1] - v[0][1])) / det;
    const double l2 = ((v[1][0] - v[0][0]) * (x[1] - v[0][1]) - (x[0] - v[0][0]) * (v[1][1] - v[0][1])) / det;
    CHECK(l1 >= -1e-9);
    CHECK(l2 >= -1e-9);
    CHECK(l1 + l2 <= 1 + 1e-9);
  }
  CHECK(mean(xs, 0) == Approx(g).margin(0.02));  // uniform over the simplex: its centroid
  CHECK(mean(xs, 1) == Approx(g).margin(0.02));
}

TEST_CASE("nsga2 crossover: the transformed space (log, ints on their step, floats out of bounds)", "[search][nsga2][crossover]") {
  const Dimension lr = dim_log("lr", 1e-4, 1.0);
  CHECK(transformed_bounds(lr).low == Approx(std::log(1e-4)));
  CHECK(to_transformed(lr, 1e-2) == Approx(std::log(1e-2)));
  CHECK(from_transformed(lr, std::log(1e-3))->get<double>() == Approx(1e-3));
  CHECK_FALSE(from_transformed(lr, std::log(5e-5)));  // below low: Optuna crosses again
  CHECK(from_transformed(lr, std::log(5e-5), true)->get<double>() == 1e-4);
  CHECK(from_transformed(lr, std::log(1e-4))->get<double>() >= 1e-4);  // exp(log(low)) rounding: still inside
  CHECK(from_transformed(lr, 1.0)->get<double>() == std::nextafter(1.0, 0.0));  // above high: clipped below it
  CHECK_FALSE(from_transformed(lr, std::nan("")));

  const Dimension batch = dim_int("batch", 64, 1000, 64);  // last value on the step: 960
  CHECK(transformed_bounds(batch).low == 32);
  CHECK(transformed_bounds(batch).high == 992);
  CHECK(*from_transformed(batch, 150) == 128);
  CHECK(*from_transformed(batch, -500) == 64);
  CHECK(*from_transformed(batch, 5000) == 960);

  const Dimension w = dim_int("w", 1, 1000, 1, true);
  CHECK(transformed_bounds(w).low == Approx(std::log(0.5)));
  CHECK(to_transformed(w, 100) == Approx(std::log(100.0)));
  CHECK(*from_transformed(w, std::log(99.7)) == 100);
  CHECK(*from_transformed(w, std::log(5000.0)) == 1000);
  CHECK(from_transformed(w, std::log(10.0))->is_number_integer());
}

namespace {

// Generation 0 of `pop` trials by hand (two objectives, all non-dominated), then `n` children
// of generation 1 from the sampler with `options`.
std::vector<Params> children(const Space& s, const std::vector<Params>& gen0, const json& options, int n,
                             std::uint64_t seed = 5) {
  auto sampler = std::move(*make_sampler("nsga2", s, seed, options));
  History h;
  h.directions = {false, false};
  for (std::size_t i = 0; i < gen0.size(); ++i) {
    TrialRecord t = complete(std::int64_t(i), gen0[i], 0);
    t.values = {double(i), -double(i)};
    h.trials.push_back(t);
  }
  std::vector<Params> out;
  for (int i = 0; i < n; ++i) out.push_back(*sampler->next(std::int64_t(gen0.size()) + i, h));
  return out;
}

const char* const kKinds[] = {"blx_alpha", "sbx", "vsbx", "undx", "spx"};

}  // namespace

TEST_CASE("nsga2 crossover: children stay inside the space; ints on their step; categoricals from a parent",
          "[search][nsga2][crossover]") {
  Space s;
  s.dims = {dim_log("lr", 1e-5, 1.0), dim_int("batch", 64, 1024, 64), dim_int("w", 1, 10000, 1, true),
            dim_uniform("m", 0.0, 1.0), dim_choice("opt", {"sgd", "lars", "adam"})};
  std::vector<Params> gen0;
  for (int i = 0; i < 8; ++i)
    gen0.push_back({{"lr", i % 2 ? 1e-4 : 1e-2}, {"batch", i % 2 ? 128 : 512}, {"w", i % 2 ? 10 : 1000},
                    {"m", 0.02 * i}, {"opt", i % 2 ? "sgd" : "adam"}});
  for (const char* k : kKinds) {
    INFO(k);
    const json o = {{"population_size", 8}, {"crossover", k}, {"crossover_prob", 1.0}, {"mutation_prob", 0.0}};
    const auto kids = children(s, gen0, o, 400);
    int crossed = 0;
    for (const auto& p : kids) {
      CHECK(p["lr"].get<double>() >= 1e-5);
      CHECK(p["lr"].get<double>() < 1.0);
      REQUIRE(p["batch"].is_number_integer());
      CHECK(p["batch"].get<std::int64_t>() % 64 == 0);
      CHECK((p["batch"].get<std::int64_t>() >= 64 && p["batch"].get<std::int64_t>() <= 1024));
      REQUIRE(p["w"].is_number_integer());
      CHECK((p["w"].get<std::int64_t>() >= 1 && p["w"].get<std::int64_t>() <= 10000));
      CHECK((p["m"].get<double>() >= 0.0 && p["m"].get<double>() < 1.0));
      CHECK(p["opt"] != "lars");  // no parent has it, and nothing mutates
      crossed += p["lr"] != 1e-4 && p["lr"] != 1e-2;
    }
    CHECK(crossed > 0);
    CHECK(children(s, gen0, o, 20) == std::vector<Params>(kids.begin(), kids.begin() + 20));  // a pure function
    CHECK(children(s, gen0, o, 20, 6) != std::vector<Params>(kids.begin(), kids.begin() + 20));
  }
}

TEST_CASE("nsga2 crossover: log ranges are crossed in log space", "[search][nsga2][crossover]") {
  Space s;
  s.dims = {dim_log("lr", 1e-5, 1.0), dim_uniform("m", 0.0, 1.0)};
  std::vector<Params> gen0;
  for (int i = 0; i < 8; ++i) gen0.push_back({{"lr", i % 2 ? 1e-4 : 1e-2}, {"m", 0.5}});
  const json o = {{"population_size", 8}, {"crossover", "blx_alpha"}, {"crossover_alpha", 0.0},
                  {"crossover_prob", 1.0}, {"mutation_prob", 0.0}};
  int between = 0, below_geo_mean = 0;
  for (const auto& p : children(s, gen0, o, 2000)) {
    const double lr = p["lr"].get<double>();
    CHECK((lr >= 1e-4 * (1 - 1e-12) && lr <= 1e-2 * (1 + 1e-12)));
    if (lr == 1e-4 || lr == 1e-2) continue;
    ++between;
    below_geo_mean += lr < 1e-3;
  }
  REQUIRE(between > 300);
  // Uniform in log space: half below the geometric mean (uniform in value: 9%).
  CHECK(double(below_geo_mean) / between == Approx(0.5).margin(0.06));
}

TEST_CASE("nsga2 crossover: a float child below its low means new parents, not clipping", "[search][nsga2][crossover]") {
  Space s;
  s.dims = {dim_uniform("x", 0.0, 1.0), dim_uniform("y", 0.0, 1.0)};
  std::vector<Params> gen0;
  for (int i = 0; i < 8; ++i) gen0.push_back({{"x", i % 2 ? 0.01 : 0.05}, {"y", 0.5}});
  const json o = {{"population_size", 8}, {"crossover", "blx_alpha"}, {"crossover_alpha", 2.0},
                  {"crossover_prob", 1.0}, {"mutation_prob", 0.0}};
  // Crossed x spreads over [-0.07, 0.13]: 35% of it below 0.
  int at_low = 0, under_parents = 0, above = 0;
  const auto kids = children(s, gen0, o, 2000);
  for (const auto& p : kids) {
    const double x = p["x"].get<double>();
    REQUIRE(x >= 0.0);
    at_low += x == 0.0;  // clipping would put about a fifth of the children here
    under_parents += x < 0.01;
    above += x > 0.05;
  }
  CHECK(at_low == 0);
  CHECK(under_parents > int(kids.size()) / 50);  // about 4%: crossed, inside [0, 0.01)
  CHECK(above > int(kids.size()) / 10);
}

TEST_CASE("nsga2 crossover: uniform is the default, spelled or not", "[search][nsga2][crossover]") {
  std::vector<Params> gen0;
  const Space s = mixed_space();
  auto random = std::move(*make_sampler("random", s, 1));
  for (int i = 0; i < 6; ++i) gen0.push_back(*random->next(i, History{}));
  CHECK(children(s, gen0, {{"population_size", 6}}, 30) ==
        children(s, gen0, {{"population_size", 6}, {"crossover", "uniform"}}, 30));
  CHECK(children(s, gen0, {{"population_size", 6}}, 30) != children(s, gen0, {{"population_size", 6}, {"crossover", "sbx"}}, 30));
}

TEST_CASE("nsga2 crossover: bad options are refused with their key and the fix", "[search][nsga2][crossover]") {
  const Space s = mixed_space();
  auto first_error = [&](const json& o) {
    auto r = make_sampler("nsga2", s, 0, o);
    REQUIRE_FALSE(r.has_value());
    INFO(r.error().front().what << " / " << r.error().front().fix);
    CHECK_FALSE(r.error().front().fix.empty());
    return r.error().front();
  };
  CHECK(first_error({{"crossover", "bogus"}}).key == "crossover");
  CHECK(first_error({{"crossover", "bogus"}}).fix.find("uniform") != std::string::npos);
  CHECK(first_error({{"crossover", "sbx"}, {"crossover_alpha", 0.3}}).key == "crossover_alpha");
  CHECK(first_error({{"crossover", "sbx"}, {"crossover_alpha", 0.3}}).fix.find("blx_alpha") != std::string::npos);
  CHECK(first_error({{"crossover_eta", 10}}).key == "crossover_eta");  // uniform takes no eta
  CHECK(first_error({{"crossover", "sbx"}, {"crossover_eta", -1}}).key == "crossover_eta");
  CHECK(first_error({{"crossover", "undx"}, {"crossover_sigma_xi", "big"}}).key == "crossover_sigma_xi");
  CHECK(first_error({{"crossover", "spx"}, {"crossover_sigma_eta", 0.1}}).key == "crossover_sigma_eta");
  const auto small = first_error({{"crossover", "undx"}, {"population_size", 2}});
  CHECK(small.key == "population_size");
  CHECK(small.fix.find("3") != std::string::npos);
  for (const json& ok : {json{{"crossover", "blx_alpha"}, {"crossover_alpha", 0.3}},
                         json{{"crossover", "vsbx"}, {"crossover_eta", 15}},
                         json{{"crossover", "undx"}, {"crossover_sigma_xi", 0.4}, {"crossover_sigma_eta", 0.2}},
                         json{{"crossover", "spx"}, {"crossover_epsilon", 1.5}, {"population_size", 3}}})
    CHECK(make_sampler("nsga2", s, 0, ok).has_value());
  // The keys are nsga2's alone.
  auto tpe = make_sampler("tpe", s, 0, {{"crossover", "sbx"}});
  REQUIRE_FALSE(tpe.has_value());
  CHECK(tpe.error().front().key == "crossover");
  const auto keys = sampler_option_keys("nsga2");
  for (const char* k : {"crossover", "crossover_alpha", "crossover_eta", "crossover_sigma_xi", "crossover_sigma_eta",
                        "crossover_epsilon"})
    CHECK(std::find(keys.begin(), keys.end(), k) != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "sbx_eta") == keys.end());
}
