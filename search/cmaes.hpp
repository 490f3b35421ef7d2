// cmaes.hpp — the state of the covariance matrix adaptation evolution strategy (Hansen's
// "The CMA Evolution Strategy: A Tutorial", 2016, the (μ/μ_w, λ) form with rank-one and
// rank-μ updates and cumulative step-size adaptation), over a box [0, 1]^n.
//
// Plain state and two operations, so the cmaes sampler can rebuild it from the history:
// `sample` draws a point for a given random stream (resampled up to 100 times to land in
// the box, then clipped), `tell` updates from one generation's (point, loss) pairs — points
// need not have been drawn from this state (a trial proposed under an earlier generation, or a
// warm-start trial): each step y = (x − m)/σ is clipped to a Mahalanobis length of
// √n + 2n/(n+2) as in Hansen's injection rule. `should_stop` is the restart test of IPOP-CMA-ES:
// σ·√C_ii below `tol` in every coordinate, a condition number beyond 1e14, or the losses of
// the last generations flat. Eigen for the linear algebra.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "search/nsga2_crossover.hpp"  // standard_normal
#include "search/random_sampler.hpp"

namespace dlsweep::search {

class CmaState {
 public:
  /// λ = 0: the default 4 + ⌊3 ln n⌋.
  CmaState(Eigen::VectorXd mean, double sigma, std::size_t lambda = 0, Eigen::MatrixXd cov = {});

  std::size_t lambda() const { return lambda_; }
  std::size_t dims() const { return static_cast<std::size_t>(mean_.size()); }
  const Eigen::VectorXd& mean() const { return mean_; }
  double sigma() const { return sigma_; }
  const Eigen::MatrixXd& cov() const { return C_; }

  /// One point in [0, 1]^n.
  Eigen::VectorXd sample(SplitMix64& rng) const;
  /// One generation: λ (point, loss) pairs, any order (ties broken by their position).
  void tell(std::vector<std::pair<Eigen::VectorXd, double>> generation);
  /// True when this run should end and a larger one start; `tol` per coordinate.
  bool should_stop(const Eigen::VectorXd& tol) const;

 private:
  void decompose();
  Eigen::VectorXd mean_, pc_, ps_, weights_, D_;
  Eigen::MatrixXd C_, B_;
  double sigma_;
  std::size_t lambda_, mu_;
  double mueff_, cc_, cs_, c1_, cmu_, damps_, chi_n_;
  std::size_t generation_ = 0;
  std::vector<double> best_losses_;  ///< the best loss of each generation told
};

}  // namespace dlsweep::search
