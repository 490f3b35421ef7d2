// gp_ehvi.hpp — expected hypervolume improvement (EHVI, Emmerich et al. 2006) for two or three
// objectives, exactly, as the gp sampler's acquisition for several objectives.
//
// The region a new loss vector y could add to the hypervolume — below the reference point and
// dominated by no point of the front — is cut once per proposal into axis-aligned cells: a grid
// over the first m-1 objectives at the front's own coordinates, each grid cell open downwards
// in the last objective up to the lowest last coordinate among the front's points that lie
// below the cell's lower corner (those are exactly the points that dominate part of the cell).
// (n+1)^(m-1) cells for a front of n points. Then
//   HVI(y)  = Σ_cells Π_k len_k(y_k),  len_k(y) = max(0, hi_k - max(lo_k, y))
//   EHVI    = Σ_cells Π_k E[len_k(Y_k)]   for independent Y_k ~ N(mu_k, sd_k²)
// (independence turns the expectation of the product into the product of expectations), with
//   E[len] = (hi-lo)Φ(a) + (hi-mu)(Φ(b)-Φ(a)) + sd(φ(b)-φ(a)),  a = (lo-mu)/sd, b = (hi-mu)/sd
// (lo = -inf: (hi-mu)Φ(b) + sd φ(b)). Losses are minimised. Pure.
#pragma once

#include <cstddef>
#include <vector>

namespace dlsweep::search::gp {

class Ehvi {
 public:
  /// `front`: loss vectors (dominated ones may be included: they add nothing); `reference`:
  /// the point the hypervolume is bounded by, 2 or 3 coordinates. Points not strictly below
  /// the reference in every objective are ignored.
  Ehvi(const std::vector<std::vector<double>>& front, std::vector<double> reference);

  /// The hypervolume a point with these losses would add.
  double improvement(const std::vector<double>& y) const;
  /// The expected improvement of a point whose losses are independent normals (sd 0: exact).
  double expected(const std::vector<double>& mu, const std::vector<double>& sd) const;

  std::size_t objectives() const { return m_; }
  std::size_t cells() const { return top_of_.size(); }

 private:
  std::size_t m_ = 0;
  /// The grid's edges in the first m-1 objectives (the second: {-inf, +inf}'s one cell when
  /// m = 2); a cell (i, j) spans [x_i, x_i+1) x [y_j, y_j+1) and, in the last objective,
  /// (-inf, tops_[top_of_[i * ny + j]]). Each interval's expected length is computed once per
  /// evaluation, so one costs O(n) normal tails and O(n^(m-1)) products.
  std::vector<double> x_, y_, tops_;
  std::vector<std::size_t> top_of_;
};

}  // namespace dlsweep::search::gp
