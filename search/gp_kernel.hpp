// gp_kernel.hpp — the Gaussian process of the gp sampler: a Matérn-5/2 kernel with a length
// scale per dimension (ARD), categorical dimensions by an exchangeable kernel, the posterior,
// and the log marginal likelihood with its gradient (what gp_fit maximises).
//
// Inputs are encoded by the sampler: a numeric column lies in [0, 1] (log where the space
// says so), a categorical column holds the choice's index. The squared distance is
//   d²(x, x') = Σ_numeric ils_j (x_j − x'_j)² + Σ_categorical ils_j [x_j ≠ x'_j]
// (ils: inverse squared length scales; a categorical pair is at distance 1 when it differs,
// the same for every pair of choices: exchangeable), and
//   k(x, x') = scale · (1 + s + s²/3) e^{−s},  s = √5 · d,
// plus `noise` on the diagonal of the training points. The hyperparameters live in log space
// for the optimiser: θ = (log ils_1..d, log scale, log(noise − min_noise)). The log prior is
// Optuna 4's default (gamma priors on the scale and the noise, −(0.1/ils + 0.1·ils) on each
// length scale), so a few points do not give degenerate length scales. Pure; Eigen.
#pragma once

#include <vector>

#include <Eigen/Dense>

namespace dlsweep::search::gp {

struct KernelParams {
  Eigen::VectorXd ils;   ///< inverse squared length scale per column
  double scale = 1.0;
  double noise = 1e-2;   ///< observation noise variance (>= the minimum the fit allows)
};

/// θ <-> KernelParams (see the file comment).
Eigen::VectorXd to_theta(const KernelParams& p, double min_noise);
KernelParams from_theta(const Eigen::VectorXd& theta, double min_noise);

/// k(a, b) without noise; `categorical[j]` marks column j.
double kernel(const Eigen::Ref<const Eigen::VectorXd>& a, const Eigen::Ref<const Eigen::VectorXd>& b,
              const KernelParams& p, const std::vector<bool>& categorical);

/// The Matérn-5/2 shape as a function of the squared distance, and its derivative d k/d(d²).
double matern52(double d2);
double matern52_grad_d2(double d2);

/// The log marginal likelihood of y (standardised) at X under θ plus the log prior; with
/// `grad`, its gradient with respect to θ. −inf when the kernel matrix is not positive definite.
double log_marginal_likelihood(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const std::vector<bool>& categorical,
                               const Eigen::VectorXd& theta, double min_noise, Eigen::VectorXd* grad = nullptr);

/// The posterior of the latent function given (X, y) under fixed hyperparameters.
class Posterior {
 public:
  Posterior(Eigen::MatrixXd X, const Eigen::VectorXd& y, std::vector<bool> categorical, KernelParams p);
  /// Mean and variance (of f, without the noise; at least 1e-12) at x.
  std::pair<double, double> predict(const Eigen::Ref<const Eigen::VectorXd>& x) const;
  /// The same posterior with the points `extra` added at their posterior mean (Kriging
  /// believer: the mean is unchanged, the variance shrinks around them).
  Posterior believing(const Eigen::MatrixXd& extra) const;
  const KernelParams& params() const { return p_; }
  bool ok() const { return ok_; }

 private:
  Eigen::MatrixXd X_;
  Eigen::VectorXd y_;
  std::vector<bool> cat_;
  KernelParams p_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;
  bool ok_ = false;
};

}  // namespace dlsweep::search::gp
