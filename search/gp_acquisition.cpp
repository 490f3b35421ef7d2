// gp_acquisition.cpp — candidates, then local search from the best ones.
#include "search/gp_acquisition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <LBFGSB.h>

namespace dlsweep::search::gp {

namespace {

// −f over the numeric columns of `base`, gradient by central differences.
struct Relaxed {
  const Acquisition& f;
  Eigen::VectorXd base;
  const std::vector<Eigen::Index>& numeric;
  double best = -std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_x;

  Eigen::VectorXd full(const Eigen::VectorXd& z) const {
    Eigen::VectorXd x = base;
    for (std::size_t i = 0; i < numeric.size(); ++i) x(numeric[i]) = z(static_cast<Eigen::Index>(i));
    return x;
  }
  double operator()(const Eigen::VectorXd& z, Eigen::VectorXd& grad) {
    Eigen::VectorXd x = full(z);
    const double v = f(x);
    if (std::isfinite(v) && v > best) {
      best = v;
      best_x = x;
    }
    for (std::size_t i = 0; i < numeric.size(); ++i) {
      const Eigen::Index c = numeric[i];
      const double h = 1e-6, lo = std::max(0.0, x(c) - h), hi = std::min(1.0, x(c) + h);
      Eigen::VectorXd a = x, b = x;
      a(c) = lo;
      b(c) = hi;
      const double fa = f(a), fb = f(b);
      grad(static_cast<Eigen::Index>(i)) = (std::isfinite(fa) && std::isfinite(fb) && hi > lo) ? -(fb - fa) / (hi - lo) : 0.0;
    }
    return std::isfinite(v) ? -v : 1e300;
  }
};

}  // namespace

Eigen::VectorXd maximize_acquisition(const Acquisition& f, const Box& box, const std::vector<Eigen::VectorXd>& seeds,
                                     const AcquisitionOptions& o, SplitMix64& rng) {
  const auto d = static_cast<Eigen::Index>(box.choices.size());
  std::vector<Eigen::VectorXd> pts = seeds;
  for (int c = 0; c < o.candidates; ++c) {
    Eigen::VectorXd x(d);
    for (Eigen::Index j = 0; j < d; ++j) {
      const auto k = box.choices[static_cast<std::size_t>(j)];
      x(j) = k ? static_cast<double>(rng.next_below(k)) : rng.next_unit();
    }
    box.snap(x);
    pts.push_back(std::move(x));
  }
  std::vector<double> score(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    score[i] = f(pts[i]);
    if (!std::isfinite(score[i])) score[i] = -std::numeric_limits<double>::infinity();
  }
  std::vector<std::size_t> order(pts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return score[a] > score[b]; });

  Eigen::VectorXd best = pts[order[0]];
  double best_score = score[order[0]];
  std::vector<Eigen::Index> numeric;
  for (Eigen::Index j = 0; j < d; ++j)
    if (box.choices[static_cast<std::size_t>(j)] == 0) numeric.push_back(j);

  LBFGSpp::LBFGSBParam<double> param;
  param.max_iterations = o.local_iterations;
  param.epsilon = 1e-6;
  param.max_linesearch = 20;
  const auto starts = std::min<std::size_t>(static_cast<std::size_t>(o.local_starts), order.size());
  for (std::size_t s = 0; s < starts; ++s) {
    Eigen::VectorXd x = pts[order[s]];
    if (!numeric.empty()) {
      Relaxed r{f, x, numeric, -std::numeric_limits<double>::infinity(), x};
      Eigen::VectorXd z(static_cast<Eigen::Index>(numeric.size()));
      for (std::size_t i = 0; i < numeric.size(); ++i) z(static_cast<Eigen::Index>(i)) = x(numeric[i]);
      const Eigen::VectorXd lb = Eigen::VectorXd::Zero(z.size()), ub = Eigen::VectorXd::Ones(z.size());
      LBFGSpp::LBFGSBSolver<double> solver(param);
      double fz = 0;
      try {
        solver.minimize(r, z, fz, lb, ub);
      } catch (const std::exception&) {
        // keep the best point seen
      }
      x = r.best_x;
      box.snap(x);
    }
    double v = f(x);
    for (Eigen::Index j = 0; j < d; ++j) {  // one sweep over each categorical column
      const auto k = box.choices[static_cast<std::size_t>(j)];
      for (std::size_t c = 0; c < k; ++c) {
        Eigen::VectorXd y = x;
        y(j) = static_cast<double>(c);
        const double w = f(y);
        if (w > v) {
          v = w;
          x = y;
        }
      }
    }
    if (std::isfinite(v) && v > best_score) {
      best_score = v;
      best = x;
    }
  }
  return best;
}

}  // namespace dlsweep::search::gp
