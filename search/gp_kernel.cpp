// gp_kernel.cpp — Matérn-5/2 ARD with an exchangeable categorical part, its marginal
// likelihood and gradient (∂/∂θ = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ)), and the Cholesky posterior.
#include "search/gp_kernel.hpp"

#include <cmath>
#include <limits>
#include <numbers>

namespace dlsweep::search::gp {

namespace {

const double kSqrt5 = std::sqrt(5.0);

double sq_diff(double a, double b, bool categorical) {
  if (categorical) return a == b ? 0.0 : 1.0;
  const double d = a - b;
  return d * d;
}

Eigen::MatrixXd gram(const Eigen::MatrixXd& X, const std::vector<bool>& cat, const KernelParams& p) {
  const auto n = X.rows();
  Eigen::MatrixXd K(n, n);
  for (Eigen::Index a = 0; a < n; ++a) {
    K(a, a) = p.scale + p.noise;
    for (Eigen::Index b = 0; b < a; ++b) K(a, b) = K(b, a) = kernel(X.row(a).transpose(), X.row(b).transpose(), p, cat);
  }
  return K;
}

}  // namespace

Eigen::VectorXd to_theta(const KernelParams& p, double min_noise) {
  Eigen::VectorXd t(p.ils.size() + 2);
  for (Eigen::Index i = 0; i < p.ils.size(); ++i) t(i) = std::log(p.ils(i));
  t(p.ils.size()) = std::log(p.scale);
  t(p.ils.size() + 1) = std::log(std::max(p.noise - min_noise, 1e-300));
  return t;
}

KernelParams from_theta(const Eigen::VectorXd& theta, double min_noise) {
  KernelParams p;
  const auto d = theta.size() - 2;
  p.ils = theta.head(d).array().exp();
  p.scale = std::exp(theta(d));
  p.noise = min_noise + std::exp(theta(d + 1));
  return p;
}

double matern52(double d2) {
  const double s = kSqrt5 * std::sqrt(std::max(d2, 0.0));
  return (1.0 + s + s * s / 3.0) * std::exp(-s);
}

double matern52_grad_d2(double d2) {
  const double s = kSqrt5 * std::sqrt(std::max(d2, 0.0));
  return -(5.0 / 6.0) * (1.0 + s) * std::exp(-s);
}

double kernel(const Eigen::Ref<const Eigen::VectorXd>& a, const Eigen::Ref<const Eigen::VectorXd>& b,
              const KernelParams& p, const std::vector<bool>& categorical) {
  double d2 = 0;
  for (Eigen::Index j = 0; j < a.size(); ++j) d2 += p.ils(j) * sq_diff(a(j), b(j), categorical[static_cast<std::size_t>(j)]);
  return p.scale * matern52(d2);
}

double log_marginal_likelihood(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const std::vector<bool>& cat,
                               const Eigen::VectorXd& theta, double min_noise, Eigen::VectorXd* grad) {
  const KernelParams p = from_theta(theta, min_noise);
  const auto n = X.rows(), d = X.cols();
  const Eigen::MatrixXd K = gram(X, cat, p);
  Eigen::LLT<Eigen::MatrixXd> llt(K);
  if (llt.info() != Eigen::Success) {
    if (grad) grad->setZero(theta.size());
    return -std::numeric_limits<double>::infinity();
  }
  const Eigen::VectorXd alpha = llt.solve(y);
  double log_det = 0;
  const Eigen::MatrixXd& L = llt.matrixLLT();
  for (Eigen::Index i = 0; i < n; ++i) log_det += std::log(L(i, i));
  double lml = -0.5 * y.dot(alpha) - log_det - 0.5 * double(n) * std::log(2 * std::numbers::pi);
  // Optuna 4's default log prior.
  for (Eigen::Index i = 0; i < d; ++i) lml += -(0.1 / p.ils(i) + 0.1 * p.ils(i));
  lml += std::log(p.scale) - p.scale;
  lml += 0.1 * std::log(p.noise) - 30.0 * p.noise;
  if (!grad) return lml;

  const Eigen::MatrixXd W = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
  grad->setZero(theta.size());
  for (Eigen::Index a = 0; a < n; ++a)
    for (Eigen::Index b = 0; b < a; ++b) {
      double d2 = 0;
      for (Eigen::Index j = 0; j < d; ++j) d2 += p.ils(j) * sq_diff(X(a, j), X(b, j), cat[static_cast<std::size_t>(j)]);
      const double w = W(a, b);  // the pair (a, b) and (b, a): ½ · 2
      const double g = w * p.scale * matern52_grad_d2(d2);
      for (Eigen::Index j = 0; j < d; ++j)
        (*grad)(j) += g * p.ils(j) * sq_diff(X(a, j), X(b, j), cat[static_cast<std::size_t>(j)]);
      (*grad)(d) += w * p.scale * matern52(d2);
    }
  // The diagonal: ∂K_aa/∂log scale = scale, ∂K_aa/∂θ_noise = noise − min_noise.
  (*grad)(d) += 0.5 * W.diagonal().sum() * p.scale;
  (*grad)(d + 1) = 0.5 * W.diagonal().sum() * (p.noise - min_noise);
  for (Eigen::Index i = 0; i < d; ++i) (*grad)(i) += 0.1 / p.ils(i) - 0.1 * p.ils(i);
  (*grad)(d) += 1.0 - p.scale;
  (*grad)(d + 1) += (p.noise - min_noise) * (0.1 / p.noise - 30.0);
  return lml;
}

Posterior::Posterior(Eigen::MatrixXd X, const Eigen::VectorXd& y, std::vector<bool> categorical, KernelParams p)
    : X_(std::move(X)), y_(y), cat_(std::move(categorical)), p_(std::move(p)) {
  llt_.compute(gram(X_, cat_, p_));
  ok_ = llt_.info() == Eigen::Success;
  if (ok_) alpha_ = llt_.solve(y_);
}

std::pair<double, double> Posterior::predict(const Eigen::Ref<const Eigen::VectorXd>& x) const {
  if (!ok_) return {0.0, p_.scale};
  Eigen::VectorXd k(X_.rows());
  for (Eigen::Index i = 0; i < X_.rows(); ++i) k(i) = kernel(X_.row(i).transpose(), x, p_, cat_);
  const double mean = k.dot(alpha_);
  const Eigen::VectorXd v = llt_.matrixL().solve(k);
  return {mean, std::max(p_.scale - v.squaredNorm(), 1e-12)};
}

Posterior Posterior::believing(const Eigen::MatrixXd& extra) const {
  if (extra.rows() == 0 || !ok_) return *this;
  Eigen::MatrixXd X(X_.rows() + extra.rows(), X_.cols());
  X << X_, extra;
  Eigen::VectorXd y(X.rows());
  y.head(X_.rows()) = y_;
  for (Eigen::Index i = 0; i < extra.rows(); ++i) y(X_.rows() + i) = predict(extra.row(i).transpose()).first;
  Posterior out(std::move(X), y, cat_, p_);
  return out.ok() ? out : *this;
}

}  // namespace dlsweep::search::gp
