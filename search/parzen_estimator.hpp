// parzen_estimator.hpp — the kernel mixtures of TPE (Bergstra et al. 2011), as Optuna's
// _ParzenEstimator builds them (Optuna 3.x defaults: prior on, magic clip on, endpoints
// off).
//
// One Kernels object per dimension holds one component per observation plus the prior
// component (last), in a common "internal" coordinate: the value for uniform and linear
// int ranges, its log for log ranges, the index for choices. Numeric components are
// truncated normals on the internal bounds (ints: the bounds widened by half a step, and
// a value's probability is its cell's mass); categorical components are smoothed
// one-hot distributions. A Mixture is the component weights (log, normalised); the
// density of a point is logsumexp over components of log weight + the kernels' log
// densities (summed over dimensions when multivariate).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/random_sampler.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

/// A dimension in internal coordinates.
struct InternalDim {
  const Dimension* dim = nullptr;
  bool categorical = false;
  std::size_t k = 0;              ///< categorical: number of choices
  double low = 0, high = 0;       ///< numeric: internal bounds
  bool discrete = false;          ///< int_range: a value is a cell

  explicit InternalDim(const Dimension& d);
  /// The internal coordinate of a param value; nullopt when it is not a value of d.
  std::optional<double> to_internal(const nlohmann::json& v) const;
  /// The value at internal coordinate x (ints rounded to the nearest value, clamped).
  nlohmann::json from_internal(double x) const;
  /// Int ranges: the cell [a, b] around the value nearest x, in internal coordinates.
  std::pair<double, double> cell(double x) const;
};

struct KernelOptions {
  double prior_weight = 1.0;
  bool magic_clip = true;
  bool multivariate = false;     ///< Scott's-rule bandwidths instead of neighbour gaps
  std::size_t n_dims = 1;        ///< multivariate: dimensions sampled jointly
};

/// Per-component kernels of one dimension; component i < n is observation i, n the prior.
class Kernels {
 public:
  Kernels(const InternalDim& dim, const std::vector<double>& observations, const KernelOptions& o);
  std::size_t components() const { return mu_.empty() ? rows_.size() : mu_.size(); }
  /// A point prepared once for all components (an int's cell is found once).
  struct Point {
    double x = 0, a = 0, b = 0, log_width = 0;
  };
  Point point(double x) const;
  /// log density (mass for discrete/categorical) of component i at a prepared point.
  double log_k(std::size_t i, const Point& p) const;
  /// The same at internal x.
  double log_k(std::size_t i, double x) const { return log_k(i, point(x)); }
  /// One draw from component i.
  double sample(std::size_t i, SplitMix64& rng) const;
  /// The log of component i's bandwidth that equal-height scoring adds: 0 for categorical
  /// and linear int dimensions, whose kernels Optuna 3.1 scores by normalised cell mass too.
  double log_sigma(std::size_t i) const {
    return log_sigma_.empty() || (dim_.discrete && !dim_.dim->log) ? 0.0 : log_sigma_[i];
  }
  /// Categorical only: the mixture's probability of each choice under `log_w`.
  std::vector<double> mixture_pmf(const std::vector<double>& log_w) const;

 private:
  const InternalDim& dim_;
  std::vector<double> mu_, sigma_, log_sigma_, log_norm_;  ///< numeric; log_norm = log(sigma·Z·sqrt(2π))
  std::vector<std::vector<double>> rows_;      ///< categorical: per-component probabilities
};

/// Optuna's default_weights: ones below 25 observations, else a ramp from 1/n to 1 over
/// the oldest n − 25 then ones; `n` observations in trial-number order, then the prior.
/// Returns the normalised log weights (n + 1 of them).
std::vector<double> component_log_weights(std::size_t n, double prior_weight);

/// The weights of equal-height scoring: each component's log weight plus the log of its
/// bandwidth in every continuous or log-int dimension of `kernels` (one Kernels per
/// dimension; categorical and linear int ones add nothing). Not normalised: a constant shift moves log l − log g by a constant.
std::vector<double> height_log_weights(const std::vector<Kernels>& kernels, std::vector<double> log_w);

/// log(sum exp(v)), stable.
double log_sum_exp(const std::vector<double>& v);

/// Standard normal quantile (Acklam's rational approximation, one Halley refinement).
double normal_quantile(double p);

}  // namespace dlsweep::search
