// gp_fit.hpp — the kernel's hyperparameters by maximising the log marginal likelihood (plus
// its prior) with L-BFGS-B (LBFGSpp) from several starts: Optuna's defaults first (every
// inverse squared length scale 1, scale 1, noise 0.01), then `restarts` points drawn in the
// bounds from a stream the caller seeds, so the fit is a pure function of its inputs.
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "search/gp_kernel.hpp"

namespace dlsweep::search::gp {

struct FitOptions {
  int restarts = 2;            ///< starts besides the default one
  double min_noise = 1e-6;     ///< the noise variance never goes below this (1e-9: deterministic objective)
  int max_iterations = 100;
};

/// The best hyperparameters found for (X, y); y standardised. `seed` keys the restarts.
KernelParams fit_kernel(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const std::vector<bool>& categorical,
                        const FitOptions& o, std::uint64_t seed);

}  // namespace dlsweep::search::gp
