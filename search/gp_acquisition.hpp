// gp_acquisition.hpp — maximising an acquisition function over the encoded space of the gp
// sampler: numeric columns in [0, 1] (ints snapped to their cells), categorical columns an
// index. Random candidates (plus the caller's seeds: the best trials so far) are scored; from
// the best few, L-BFGS-B (LBFGSpp, central-difference gradient) climbs over the numeric
// columns of the continuous relaxation, then one sweep over each categorical column's choices
// keeps any that scores higher; the best point after snapping wins. Deterministic for the
// stream it is given.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <Eigen/Dense>

#include "search/random_sampler.hpp"

namespace dlsweep::search::gp {

struct Box {
  std::vector<std::size_t> choices;  ///< per column: 0 numeric, else the number of choices
  /// Maps a point onto the nearest point the space can hold (ints onto their cells).
  std::function<void(Eigen::VectorXd&)> snap;
};

struct AcquisitionOptions {
  int candidates = 1024;
  int local_starts = 4;
  int local_iterations = 30;
};

using Acquisition = std::function<double(const Eigen::VectorXd&)>;

/// The best point found; `seeds` are scored with the candidates.
Eigen::VectorXd maximize_acquisition(const Acquisition& f, const Box& box, const std::vector<Eigen::VectorXd>& seeds,
                                     const AcquisitionOptions& o, SplitMix64& rng);

}  // namespace dlsweep::search::gp
