// nsga2_crossover.cpp — Optuna 3.1's BLX-alpha, SBX, vSBX, UNDX and SPX crossovers, and the
// search-space transform they work in.
#include "search/nsga2_crossover.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <fmt/format.h>

namespace dlsweep::search {

namespace {

constexpr std::string_view kNames[] = {"uniform", "blx_alpha", "sbx", "vsbx", "undx", "spx"};

// Which operator reads each parameter key.
struct ParamKey {
  std::string_view key;
  std::vector<CrossoverKind> kinds;
};

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double norm(const Vec& a) { return std::sqrt(dot(a, a)); }

double eta_of(const CrossoverOptions& o, bool multi_objective) { return o.eta.value_or(multi_objective ? 20.0 : 2.0); }

Vec blx_alpha(double alpha, const std::vector<Vec>& p, SplitMix64& rng) {
  Vec child(p[0].size());
  for (std::size_t i = 0; i < child.size(); ++i) {
    const double lo = std::min(p[0][i], p[1][i]), hi = std::max(p[0][i], p[1][i]);
    const double diff = alpha * (hi - lo);
    const double low = lo - diff, high = hi + diff;
    child[i] = (high - low) * rng.next_unit() + low;
  }
  return child;
}

// One gene of SBX / vSBX: with probability 1/2 one of the two crossed values, else one of the
// parents' (Optuna builds a single child).
double pick(double c1, double c2, double x1, double x2, SplitMix64& rng) {
  if (rng.next_unit() < 0.5) return rng.next_unit() < 0.5 ? c1 : c2;
  return rng.next_unit() < 0.5 ? x1 : x2;
}

Vec sbx(double eta, const std::vector<Vec>& p, const std::vector<Bounds>& bounds, SplitMix64& rng) {
  Vec child(p[0].size());
  for (std::size_t i = 0; i < child.size(); ++i) {
    const double xl = bounds[i].low, xu = bounds[i].high;
    const double xmin = std::min(p[0][i], p[1][i]), xmax = std::max(p[0][i], p[1][i]);
    const double xdiff = std::max(xmax - xmin, 1e-10);
    const double beta1 = 1 + 2 * (xmin - xl) / xdiff;
    const double beta2 = 1 + 2 * (xu - xmax) / xdiff;
    const double alpha1 = 2 - std::pow(beta1, -(eta + 1));
    const double alpha2 = 2 - std::pow(beta2, -(eta + 1));
    const double u = rng.next_unit();
    const double e = 1 / (eta + 1);
    const double betaq1 = u > 1 / alpha1 ? std::pow(1 / (2 - u * alpha1), e) : std::pow(u * alpha1, e);  // Eq. (3)
    const double betaq2 = u > 1 / alpha2 ? std::pow(1 / (2 - u * alpha2), e) : std::pow(u * alpha2, e);
    const double c1 = 0.5 * ((xmin + xmax) - betaq1 * xdiff);  // Eq. (4)
    const double c2 = 0.5 * ((xmin + xmax) + betaq2 * xdiff);  // Eq. (5)
    child[i] = pick(c1, c2, p[0][i], p[1][i], rng);
  }
  return child;
}

Vec vsbx(double eta, const std::vector<Vec>& p, SplitMix64& rng) {
  Vec child(p[0].size());
  for (std::size_t i = 0; i < child.size(); ++i) {
    const double x1 = p[0][i], x2 = p[1][i];
    const double u = rng.next_unit();
    const double b1 = std::pow(0.5 * u, 1 / (eta + 1));
    const double b2 = std::pow(0.5 * (1 - u), 1 / (eta + 1));
    double c1, c2;
    if (u > 0.5) {
      c1 = 0.5 * ((1 - b1) * x1 + (1 + b1) * x2);
      c2 = 0.5 * (-(1 - b2) * x1 + (3 - b2) * x2);
    } else {
      c1 = 0.5 * ((1 + b1) * x1 + (1 - b1) * x2);
      c2 = 0.5 * ((3 - b2) * x1 - (1 - b2) * x2);
    }
    child[i] = pick(c1, c2, x1, x2, rng);
  }
  return child;
}

// n-1 orthonormal vectors spanning the complement of e (Optuna: the QR factorisation of the
// identity with its first row replaced by e, when e is not zero). Any orthonormal basis gives
// the same distribution: the etas are i.i.d. centred normals.
std::vector<Vec> complement_basis(const Vec& e, std::size_t n) {
  std::vector<Vec> basis;
  const double ne = norm(e);
  if (ne == 0) {
    for (std::size_t j = 1; j < n; ++j) {
      Vec v(n, 0.0);
      v[j] = 1;
      basis.push_back(v);
    }
    return basis;
  }
  Vec first = e;
  for (double& x : first) x /= ne;
  basis.push_back(first);
  for (std::size_t j = 0; j < n && basis.size() < n; ++j) {
    Vec v(n, 0.0);
    v[j] = 1;
    for (int pass = 0; pass < 2; ++pass)  // Gram-Schmidt, twice for round-off
      for (const auto& b : basis) {
        const double c = dot(v, b);
        for (std::size_t k = 0; k < n; ++k) v[k] -= c * b[k];
      }
    const double nv = norm(v);
    if (nv < 1e-8) continue;
    for (double& x : v) x /= nv;
    basis.push_back(std::move(v));
  }
  basis.erase(basis.begin());
  return basis;
}

Vec undx(const CrossoverOptions& o, const std::vector<Vec>& p, SplitMix64& rng) {
  const std::size_t n = p[0].size();
  const double sigma_eta = o.sigma_eta.value_or(0.35 / std::sqrt(double(n)));
  // As Optuna 3.1: rng.normal(0, sigma**2), i.e. sigma squared is the standard deviation.
  Vec etas(n);
  for (double& x : etas) x = standard_normal(rng) * sigma_eta * sigma_eta;
  const double xi = standard_normal(rng) * o.sigma_xi * o.sigma_xi;
  Vec child(n), d(n), v12(n), v13(n);
  for (std::size_t i = 0; i < n; ++i) {
    child[i] = (p[0][i] + p[1][i]) / 2 + xi * (p[0][i] - p[1][i]);  // xp + xi * d
    v12[i] = p[1][i] - p[0][i];
    v13[i] = p[2][i] - p[0][i];
  }
  if (n <= 1) return child;  // no sub-search component
  Vec e12 = v12;
  const double m12 = std::max(norm(v12), 1e-10);
  for (double& x : e12) x /= m12;
  // D: the distance of x3 from the line through x1 and x2.
  Vec orth = v13;
  const double c = dot(v13, e12);
  for (std::size_t i = 0; i < n; ++i) orth[i] -= c * e12[i];
  const double dist = norm(orth);
  const auto es = complement_basis(e12, n);
  for (std::size_t k = 0; k + 1 < n && k < es.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) child[i] += dist * etas[k] * es[k][i];
  return child;
}

Vec spx(const CrossoverOptions& o, const std::vector<Vec>& p, SplitMix64& rng) {
  const std::size_t n = p[0].size(), k = p.size();
  const double eps = o.epsilon.value_or(std::sqrt(double(n) + 2));
  Vec g(n, 0.0);
  for (const auto& x : p)
    for (std::size_t i = 0; i < n; ++i) g[i] += x[i] / double(k);
  std::vector<Vec> xs(k, Vec(n));  // Eq. (3)
  for (std::size_t j = 0; j < k; ++j)
    for (std::size_t i = 0; i < n; ++i) xs[j][i] = g[i] + eps * (p[j][i] - g[i]);
  Vec ck(n, 0.0);  // Eq. (4)
  for (std::size_t j = 1; j < k; ++j) {
    const double r = std::pow(rng.next_unit(), 1.0 / double(j));  // Eq. (2)
    for (std::size_t i = 0; i < n; ++i) ck[i] = r * (xs[j - 1][i] - xs[j][i] + ck[i]);
  }
  Vec child(n);
  for (std::size_t i = 0; i < n; ++i) child[i] = xs[k - 1][i] + ck[i];  // Eq. (5)
  return child;
}

}  // namespace

CrossoverOptions CrossoverOptions::read(OptionReader& r) {
  CrossoverOptions o;
  const std::string kind = r.word("crossover", "uniform", {"uniform", "blx_alpha", "sbx", "vsbx", "undx", "spx"});
  for (std::size_t i = 0; i < std::size(kNames); ++i)
    if (kNames[i] == kind) o.kind = static_cast<CrossoverKind>(i);
  using K = CrossoverKind;
  const ParamKey keys[] = {{"crossover_alpha", {K::blx_alpha}},
                           {"crossover_eta", {K::sbx, K::vsbx}},
                           {"crossover_sigma_xi", {K::undx}},
                           {"crossover_sigma_eta", {K::undx}},
                           {"crossover_epsilon", {K::spx}}};
  for (const auto& k : keys) {
    if (!r.has(std::string(k.key))) continue;
    if (std::find(k.kinds.begin(), k.kinds.end(), o.kind) != k.kinds.end()) continue;
    const std::string owner(crossover_name(*k.kinds.begin()));
    const std::string also = k.kinds.size() > 1 ? fmt::format(" or {}", crossover_name(*(k.kinds.begin() + 1))) : "";
    r.error(std::string(k.key), fmt::format("{} applies to crossover: {}{} only, not {}", k.key, owner, also, kind),
            fmt::format("remove {}, or set crossover: {}", k.key, owner));
  }
  o.alpha = r.number("crossover_alpha", o.alpha, 0.0, 1e3);
  if (r.has("crossover_eta")) o.eta = r.number("crossover_eta", 2.0, 0.0, 1e4);
  o.sigma_xi = r.number("crossover_sigma_xi", o.sigma_xi, 0.0, 1e3);
  if (r.has("crossover_sigma_eta")) o.sigma_eta = r.number("crossover_sigma_eta", 0.35, 0.0, 1e3);
  if (r.has("crossover_epsilon")) o.epsilon = r.number("crossover_epsilon", 1.0, 0.0, 1e3);
  return o;
}

std::size_t crossover_parents(CrossoverKind kind) {
  return kind == CrossoverKind::undx || kind == CrossoverKind::spx ? 3 : 2;
}

std::string_view crossover_name(CrossoverKind kind) { return kNames[static_cast<std::size_t>(kind)]; }

Vec crossover_numerical(const CrossoverOptions& o, const std::vector<Vec>& parents, const std::vector<Bounds>& bounds,
                        bool multi_objective, SplitMix64& rng) {
  if (parents.empty() || parents[0].empty()) return {};
  switch (o.kind) {
    case CrossoverKind::uniform: {
      Vec child(parents[0].size());
      for (std::size_t i = 0; i < child.size(); ++i) child[i] = parents[rng.next_unit() < 0.5 ? 1 : 0][i];
      return child;
    }
    case CrossoverKind::blx_alpha: return blx_alpha(o.alpha, parents, rng);
    case CrossoverKind::sbx: return sbx(eta_of(o, multi_objective), parents, bounds, rng);
    case CrossoverKind::vsbx: return vsbx(eta_of(o, multi_objective), parents, rng);
    case CrossoverKind::undx: return undx(o, parents, rng);
    case CrossoverKind::spx: return spx(o, parents, rng);
  }
  return {};
}

bool is_numerical(const Dimension& d) { return d.kind != Dimension::Kind::choice; }

namespace {

// int_range: the last value on the step, and the transformed low end of the first cell.
double int_last(const Dimension& d) {
  return double(d.int_low) + double(std::max<std::int64_t>(d.cardinality(), 1) - 1) * double(std::max<std::int64_t>(d.int_step, 1));
}

}  // namespace

Bounds transformed_bounds(const Dimension& d) {
  switch (d.kind) {
    case Dimension::Kind::uniform: return {d.low, d.high};
    case Dimension::Kind::log_uniform: return {std::log(d.low), std::log(d.high)};
    case Dimension::Kind::int_range: {
      const double half = 0.5 * double(std::max<std::int64_t>(d.int_step, 1));
      if (!d.log) return {double(d.int_low) - half, int_last(d) + half};
      const double a = double(d.int_low) - half;  // as draw_int: the first cell starts at low when low - step/2 <= 0
      return {std::log(a > 0 ? a : double(d.int_low)), std::log(int_last(d) + half)};
    }
    case Dimension::Kind::choice: break;
  }
  return {0, 1};
}

double to_transformed(const Dimension& d, const nlohmann::json& v) {
  const double x = v.get<double>();
  const bool log = d.kind == Dimension::Kind::log_uniform || (d.kind == Dimension::Kind::int_range && d.log);
  return log ? std::log(x) : x;
}

std::optional<nlohmann::json> from_transformed(const Dimension& d, double x, bool clip) {
  const Bounds b = transformed_bounds(d);
  if (!std::isfinite(x)) {
    if (!clip) return std::nullopt;
    x = std::isnan(x) ? b.low : std::clamp(x, b.low, b.high);
  }
  switch (d.kind) {
    case Dimension::Kind::uniform:
    case Dimension::Kind::log_uniform: {
      double v = d.kind == Dimension::Kind::log_uniform ? std::exp(x) : x;
      // exp(log(low)) may round below low: a parent at low is not outside the space.
      if (v < d.low && (clip || v >= d.low - 1e-12 * std::abs(d.low))) v = d.low;
      if (v < d.low) return std::nullopt;                     // Optuna: _is_contained fails, cross again
      if (v >= d.high) v = std::nextafter(d.high, d.low);     // Optuna: min(v, nextafter(high, low))
      return nlohmann::json(v);
    }
    case Dimension::Kind::int_range: {
      const double step = double(std::max<std::int64_t>(d.int_step, 1));
      const double v = d.log ? std::exp(x) : x;
      const double n = double(std::max<std::int64_t>(d.cardinality(), 1));
      const double k = std::clamp(std::nearbyint((v - double(d.int_low)) / step), 0.0, n - 1);
      return nlohmann::json(d.int_low + static_cast<std::int64_t>(k) * std::max<std::int64_t>(d.int_step, 1));
    }
    case Dimension::Kind::choice: break;
  }
  return std::nullopt;
}

double standard_normal(SplitMix64& rng) {
  const double u1 = rng.next_unit(), u2 = rng.next_unit();
  return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace dlsweep::search
