// sobol.hpp — scrambled Sobol points, one coordinate at a time, by index.
//
// Direction numbers: Joe & Kuo (2008), new-joe-kuo-6.21201, as shipped in Boost.Random's
// sobol_table.hpp (3667 dimensions). Point i's coordinate is the XOR of the direction
// numbers of the bits of i (no Gray-code state), so any point can be computed alone — a
// trial's params depend only on (seed, number). Scrambling (Matoušek 1998, as in SciPy's
// `Sobol(scramble=True)`): a random lower-triangular binary matrix (linear matrix
// scramble) and a random digital shift per coordinate, both from the seed. Scrambling
// keeps the net's balance and removes the all-zeros first point.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace dlsweep::search {

class Sobol {
 public:
  static constexpr std::size_t kMaxDims = 3667;

  /// `dims` coordinates (<= kMaxDims; throws std::invalid_argument beyond); scrambled from
  /// `seed` unless `scramble` is false.
  Sobol(std::size_t dims, std::uint64_t seed, bool scramble);

  /// Coordinate `dim` of point `index`, in (0, 1): the 32-bit value plus half a unit.
  double coordinate(std::uint64_t index, std::size_t dim) const;
  std::size_t dims() const { return v_.size(); }

 private:
  std::vector<std::array<std::uint32_t, 32>> v_;   ///< direction numbers, MSB-aligned
  std::vector<std::array<std::uint32_t, 32>> lms_; ///< scramble matrix rows (row i: output bit 31-i)
  std::vector<std::uint32_t> shift_;
  bool scramble_;
};

}  // namespace dlsweep::search
