// gp_fit.cpp — L-BFGS-B over θ (search/gp_kernel.hpp) in a box, the best of several starts.
// LBFGSpp throws when a line search fails (a flat or non-finite stretch); the best point
// the objective saw is kept either way.
#include "search/gp_fit.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <LBFGSB.h>

#include "search/random_sampler.hpp"

namespace dlsweep::search::gp {

namespace {

struct Objective {
  const Eigen::MatrixXd& X;
  const Eigen::VectorXd& y;
  const std::vector<bool>& cat;
  double min_noise;
  double best = std::numeric_limits<double>::infinity();
  Eigen::VectorXd best_theta;

  double operator()(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    const double lml = log_marginal_likelihood(X, y, cat, theta, min_noise, &grad);
    grad = -grad;
    if (!std::isfinite(lml)) {
      grad.setZero();
      return 1e300;
    }
    if (-lml < best) {
      best = -lml;
      best_theta = theta;
    }
    return -lml;
  }
};

}  // namespace

KernelParams fit_kernel(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const std::vector<bool>& categorical,
                        const FitOptions& o, std::uint64_t seed) {
  const auto d = X.cols();
  Eigen::VectorXd lb(d + 2), ub(d + 2);
  lb.head(d).setConstant(std::log(1e-4));
  ub.head(d).setConstant(std::log(1e4));
  lb(d) = std::log(1e-3);
  ub(d) = std::log(1e3);
  lb(d + 1) = std::log(1e-12);
  ub(d + 1) = std::log(10.0);

  KernelParams start;
  start.ils = Eigen::VectorXd::Ones(d);
  start.scale = 1.0;
  start.noise = o.min_noise + 1e-2;
  Objective f{X, y, categorical, o.min_noise, std::numeric_limits<double>::infinity(), to_theta(start, o.min_noise)};

  LBFGSpp::LBFGSBParam<double> param;
  param.max_iterations = o.max_iterations;
  // Optuna's gtol (1e-2 on the projected gradient), and a stop once the objective moves less
  // than 1e-6 relatively over 3 iterations: the fit is O(n³) per step.
  param.epsilon = 1e-2;
  param.epsilon_rel = 0;
  param.past = 3;
  param.delta = 1e-6;
  param.max_linesearch = 40;
  SplitMix64 rng(SplitMix64::mix(seed ^ 0x6b65726e656cULL));
  for (int r = 0; r <= o.restarts; ++r) {
    Eigen::VectorXd theta = to_theta(start, o.min_noise);
    if (r > 0)
      for (Eigen::Index i = 0; i < theta.size(); ++i) theta(i) = lb(i) + rng.next_unit() * (ub(i) - lb(i));
    theta = theta.cwiseMax(lb).cwiseMin(ub);
    LBFGSpp::LBFGSBSolver<double> solver(param);
    double fx = 0;
    try {
      solver.minimize(f, theta, fx, lb, ub);
    } catch (const std::exception&) {
      // keep the best point seen
    }
  }
  return from_theta(f.best_theta, o.min_noise);
}

}  // namespace dlsweep::search::gp
