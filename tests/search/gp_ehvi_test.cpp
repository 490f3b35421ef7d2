// Expected hypervolume improvement (search/gp_ehvi): the box decomposition against the exact
// hypervolume of common/pareto (the improvement of a point is HV(front + point) - HV(front)),
// and the closed-form expectation against a Monte Carlo estimate over the same normals.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "common/pareto.hpp"
#include "search/gp_ehvi.hpp"

using dlsweep::search::gp::Ehvi;

namespace {

using Pts = std::vector<std::vector<double>>;

// A random front: n points on a noisy simplex-like surface (some dominated: they must add nothing).
Pts random_front(std::mt19937_64& g, std::size_t n, std::size_t m) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Pts pts;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> p(m);
    double s = 0;
    for (auto& x : p) s += x = u(g) + 1e-3;
    for (auto& x : p) x = x / s + 0.2 * u(g);
    pts.push_back(p);
  }
  return pts;
}

double hv_gain(const Pts& front, const std::vector<double>& y, const std::vector<double>& ref) {
  Pts with = front;
  with.push_back(y);
  return dlsweep::hypervolume(with, ref) - dlsweep::hypervolume(front, ref);
}

}  // namespace

TEST_CASE("ehvi: a point's improvement is the hypervolume it adds, 2 and 3 objectives", "[search][gp][ehvi]") {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-0.2, 1.4);
  for (std::size_t m : {2u, 3u}) {
    for (std::size_t n : {0u, 1u, 5u, 17u}) {
      const Pts front = random_front(g, n, m);
      const std::vector<double> ref(m, 1.2);
      const Ehvi e(front, ref);
      CHECK(e.cells() == (m == 2 ? n + 1 : (n + 1) * (n + 1)));  // distinct coordinates: no edge merges
      for (int t = 0; t < 200; ++t) {
        std::vector<double> y(m);
        for (auto& x : y) x = u(g);
        INFO("m " << m << " n " << n << " trial " << t);
        CHECK(e.improvement(y) == Approx(hv_gain(front, y, ref)).margin(1e-12));
      }
      // A front point itself, and anything it dominates, adds nothing.
      for (const auto& p : front) {
        CHECK(e.improvement(p) == Approx(0.0).margin(1e-12));
        auto worse = p;
        for (auto& x : worse) x += 0.01;
        CHECK(e.improvement(worse) == Approx(0.0).margin(1e-12));
      }
    }
  }
}

TEST_CASE("ehvi: the expectation under independent normals matches Monte Carlo", "[search][gp][ehvi]") {
  std::mt19937_64 g(11);
  for (std::size_t m : {2u, 3u}) {
    const Pts front = random_front(g, 9, m);
    const std::vector<double> ref(m, 1.3);
    const Ehvi e(front, ref);
    const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
        {std::vector<double>(m, 0.4), std::vector<double>(m, 0.2)},   // near the front
        {std::vector<double>(m, 0.9), std::vector<double>(m, 0.05)},  // behind it, sure
        {std::vector<double>(m, 0.2), std::vector<double>(m, 0.5)},   // ahead, unsure
        {std::vector<double>(m, 1.6), std::vector<double>(m, 0.3)},   // beyond the reference
    };
    for (const auto& [mu, sd] : cases) {
      std::normal_distribution<double> z(0.0, 1.0);
      const int draws = 200'000;
      double sum = 0, sq = 0;
      std::vector<double> y(m);
      for (int i = 0; i < draws; ++i) {
        for (std::size_t k = 0; k < m; ++k) y[k] = mu[k] + sd[k] * z(g);
        const double v = e.improvement(y);
        sum += v;
        sq += v * v;
      }
      const double mean = sum / draws, se = std::sqrt(std::max(0.0, sq / draws - mean * mean) / draws);
      INFO("m " << m << " mu " << mu[0] << " sd " << sd[0] << ": MC " << mean << " +- " << se);
      CHECK(std::abs(e.expected(mu, sd) - mean) <= 4 * se + 1e-6);  // the last case: ~1e-8, rarer than 1 in 200,000
      CHECK(e.expected(mu, sd) >= 0);
    }
  }
}

TEST_CASE("ehvi: sd 0 is the improvement; an empty front improves the whole box below the reference",
          "[search][gp][ehvi]") {
  const Pts front = {{0.2, 0.8}, {0.5, 0.5}, {0.8, 0.2}};
  const Ehvi e(front, {1.0, 1.0});
  CHECK(e.expected({0.3, 0.3}, {0.0, 0.0}) == Approx(e.improvement({0.3, 0.3})));
  CHECK(e.improvement({0.3, 0.3}) == Approx(0.2 * 0.5 + 0.3 * 0.2));  // two steps of the staircase
  CHECK(e.expected({0.3, 0.3}, {1e-9, 1e-9}) == Approx(e.improvement({0.3, 0.3})).epsilon(1e-6));
  const Ehvi empty({}, {1.0, 2.0, 3.0});
  CHECK(empty.improvement({0.0, 0.0, 0.0}) == Approx(6.0));
  CHECK(empty.improvement({0.5, 1.5, 2.5}) == Approx(0.125));
  // A point beyond the reference in one objective adds nothing, sure or not quite.
  CHECK(e.improvement({0.1, 1.1}) == 0.0);
  CHECK(e.expected({0.1, 1.5}, {0.01, 0.01}) < 1e-12);
  CHECK_THROWS(Ehvi(front, {1.0}));
  CHECK_THROWS(Ehvi({{0.1, 0.2, 0.3}}, {1.0, 1.0}));
}
