// gp_ehvi.cpp — see gp_ehvi.hpp.
#include "search/gp_ehvi.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace dlsweep::search::gp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }

// E[max(0, hi - max(lo, Y))] for Y ~ N(mu, sd²).
double expected_length(double lo, double hi, double mu, double sd) {
  if (!(sd > 0)) return std::max(0.0, hi - std::max(lo, mu));
  const double b = (hi - mu) / sd;
  const double up = (hi - mu) * cdf(b) + sd * pdf(b);  // as if lo were -inf
  if (lo == -kInf) return std::max(0.0, up);
  const double a = (lo - mu) / sd;
  // (hi-lo)Φ(a) + (hi-mu)(Φ(b)-Φ(a)) + sd(φ(b)-φ(a)), regrouped around the -inf form.
  return std::max(0.0, up - (lo - mu) * cdf(a) - sd * pdf(a));
}

}  // namespace

Ehvi::Ehvi(const std::vector<std::vector<double>>& front, std::vector<double> reference) : m_(reference.size()) {
  if (m_ < 2 || m_ > 3) throw std::invalid_argument("Ehvi: 2 or 3 objectives");
  std::vector<std::vector<double>> pts;
  for (const auto& p : front) {
    if (p.size() != m_) throw std::invalid_argument("Ehvi: a front point of the wrong size");
    bool below = true;
    for (std::size_t k = 0; k < m_; ++k) below = below && p[k] < reference[k];
    if (below) pts.push_back(p);
  }
  // Edges: -inf, the points' coordinates, the reference.
  auto edges = [&](std::size_t k) {
    std::vector<double> e{-kInf};
    for (const auto& p : pts) e.push_back(p[k]);
    std::sort(e.begin() + 1, e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
    e.push_back(reference[k]);
    return e;
  };
  const std::size_t last = m_ - 1;
  x_ = edges(0);
  y_ = m_ == 3 ? edges(1) : std::vector<double>{-kInf, kInf};
  tops_ = edges(last);
  tops_.erase(tops_.begin());  // the last objective's cells are open downwards: only their tops
  const std::size_t nx = x_.size() - 1, ny = y_.size() - 1;
  for (std::size_t i = 0; i < nx; ++i)
    for (std::size_t j = 0; j < ny; ++j) {
      // The front's points at or below the cell's lower corner in the grid's objectives
      // dominate the cell from their last coordinate up; the others miss it entirely.
      double top = reference[last];
      for (const auto& p : pts)
        if (p[0] <= x_[i] && (m_ < 3 || p[1] <= y_[j])) top = std::min(top, p[last]);
      top_of_.push_back(static_cast<std::size_t>(std::lower_bound(tops_.begin(), tops_.end(), top) - tops_.begin()));
    }
}

double Ehvi::improvement(const std::vector<double>& y) const {
  return expected(y, std::vector<double>(m_, 0.0));
}

double Ehvi::expected(const std::vector<double>& mu, const std::vector<double>& sd) const {
  const std::size_t nx = x_.size() - 1, ny = y_.size() - 1, last = m_ - 1;
  std::vector<double> lx(nx), ly(ny, 1.0), lz(tops_.size());
  for (std::size_t i = 0; i < nx; ++i) lx[i] = expected_length(x_[i], x_[i + 1], mu[0], sd[0]);
  if (m_ == 3)
    for (std::size_t j = 0; j < ny; ++j) ly[j] = expected_length(y_[j], y_[j + 1], mu[1], sd[1]);
  for (std::size_t t = 0; t < tops_.size(); ++t) lz[t] = expected_length(-kInf, tops_[t], mu[last], sd[last]);
  double sum = 0;
  for (std::size_t i = 0; i < nx; ++i) {
    if (lx[i] <= 0) continue;
    double row = 0;
    for (std::size_t j = 0; j < ny; ++j) row += ly[j] * lz[top_of_[i * ny + j]];
    sum += lx[i] * row;
  }
  return sum;
}

}  // namespace dlsweep::search::gp
