// cmaes.cpp — Hansen's tutorial, Table 1 defaults, one generation at a time.
#include "search/cmaes.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

namespace dlsweep::search {

CmaState::CmaState(Eigen::VectorXd mean, double sigma, std::size_t lambda, Eigen::MatrixXd cov)
    : mean_(std::move(mean)), sigma_(sigma) {
  const auto n = static_cast<double>(mean_.size());
  lambda_ = lambda ? lambda : 4 + static_cast<std::size_t>(std::floor(3 * std::log(n)));
  lambda_ = std::max<std::size_t>(lambda_, 2);
  mu_ = lambda_ / 2;
  weights_.resize(static_cast<Eigen::Index>(mu_));
  for (std::size_t i = 0; i < mu_; ++i)
    weights_(static_cast<Eigen::Index>(i)) = std::log((double(lambda_) + 1) / 2) - std::log(double(i) + 1);
  weights_ /= weights_.sum();
  mueff_ = 1.0 / weights_.squaredNorm();
  cc_ = (4 + mueff_ / n) / (n + 4 + 2 * mueff_ / n);
  cs_ = (mueff_ + 2) / (n + mueff_ + 5);
  c1_ = 2 / ((n + 1.3) * (n + 1.3) + mueff_);
  cmu_ = std::min(1 - c1_, 2 * (mueff_ - 2 + 1 / mueff_) / ((n + 2) * (n + 2) + mueff_));
  damps_ = 1 + 2 * std::max(0.0, std::sqrt((mueff_ - 1) / (n + 1)) - 1) + cs_;
  chi_n_ = std::sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n));
  pc_ = Eigen::VectorXd::Zero(mean_.size());
  ps_ = Eigen::VectorXd::Zero(mean_.size());
  C_ = cov.size() ? cov : Eigen::MatrixXd::Identity(mean_.size(), mean_.size());
  decompose();
}

void CmaState::decompose() {
  C_ = 0.5 * (C_ + C_.transpose());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C_);
  B_ = es.eigenvectors();
  D_ = es.eigenvalues().cwiseMax(1e-20).cwiseSqrt();
}

Eigen::VectorXd CmaState::sample(SplitMix64& rng) const {
  Eigen::VectorXd x(mean_.size());
  for (int attempt = 0; attempt < 100; ++attempt) {
    Eigen::VectorXd z(mean_.size());
    for (Eigen::Index i = 0; i < z.size(); ++i) z(i) = standard_normal(rng);
    x = mean_ + sigma_ * (B_ * D_.asDiagonal() * z);
    if ((x.array() >= 0).all() && (x.array() <= 1).all()) return x;
  }
  return x.cwiseMax(0.0).cwiseMin(1.0);
}

void CmaState::tell(std::vector<std::pair<Eigen::VectorXd, double>> gen) {
  const auto n = static_cast<double>(mean_.size());
  std::vector<std::size_t> order(gen.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return gen[a].second < gen[b].second; });
  const Eigen::MatrixXd inv_sqrt = B_ * D_.cwiseInverse().asDiagonal() * B_.transpose();
  const double max_len = std::sqrt(n) + 2 * n / (n + 2);
  std::vector<Eigen::VectorXd> ys;
  for (std::size_t i = 0; i < mu_ && i < order.size(); ++i) {
    Eigen::VectorXd y = (gen[order[i]].first - mean_) / sigma_;
    const double len = (inv_sqrt * y).norm();
    if (len > max_len) y *= max_len / len;
    ys.push_back(std::move(y));
  }
  Eigen::VectorXd yw = Eigen::VectorXd::Zero(mean_.size());
  for (std::size_t i = 0; i < ys.size(); ++i) yw += weights_(static_cast<Eigen::Index>(i)) * ys[i];
  mean_ = mean_ + sigma_ * yw;
  ps_ = (1 - cs_) * ps_ + std::sqrt(cs_ * (2 - cs_) * mueff_) * (inv_sqrt * yw);
  ++generation_;
  const double hsig_lhs = ps_.norm() / std::sqrt(1 - std::pow(1 - cs_, 2.0 * double(generation_)));
  const double hsig = hsig_lhs < (1.4 + 2 / (n + 1)) * chi_n_ ? 1.0 : 0.0;
  pc_ = (1 - cc_) * pc_ + hsig * std::sqrt(cc_ * (2 - cc_) * mueff_) * yw;
  Eigen::MatrixXd rank_mu = Eigen::MatrixXd::Zero(mean_.size(), mean_.size());
  for (std::size_t i = 0; i < ys.size(); ++i) rank_mu += weights_(static_cast<Eigen::Index>(i)) * ys[i] * ys[i].transpose();
  C_ = (1 - c1_ - cmu_) * C_ + c1_ * (pc_ * pc_.transpose() + (1 - hsig) * cc_ * (2 - cc_) * C_) + cmu_ * rank_mu;
  sigma_ *= std::exp((cs_ / damps_) * (ps_.norm() / chi_n_ - 1));
  sigma_ = std::min(sigma_, 1.0);
  decompose();
  if (!order.empty()) best_losses_.push_back(gen[order.front()].second);
}

bool CmaState::should_stop(const Eigen::VectorXd& tol) const {
  bool small = true;
  for (Eigen::Index i = 0; i < mean_.size(); ++i) small = small && sigma_ * std::sqrt(C_(i, i)) < tol(i);
  if (small) return true;
  if (D_.maxCoeff() / D_.minCoeff() > 1e7) return true;  // condition number of C beyond 1e14
  const std::size_t window = 10 + static_cast<std::size_t>(std::ceil(30.0 * double(mean_.size()) / double(lambda_)));
  if (best_losses_.size() >= window) {
    const auto [lo, hi] = std::minmax_element(best_losses_.end() - static_cast<std::ptrdiff_t>(window), best_losses_.end());
    if (*hi - *lo < 1e-12) return true;
  }
  return false;
}

}  // namespace dlsweep::search
