// sobol.cpp — direction numbers from Boost's Joe–Kuo table (the recurrence of Bratley &
// Fox 1988), linear matrix scramble and digital shift.
#include "search/sobol.hpp"

#include <bit>
#include <stdexcept>

#include <boost/random/detail/sobol_table.hpp>

#include "search/random_sampler.hpp"

namespace dlsweep::search {

Sobol::Sobol(std::size_t dims, std::uint64_t seed, bool scramble) : scramble_(scramble) {
  using Table = boost::random::detail::qrng_tables::sobol;
  if (dims > kMaxDims) throw std::invalid_argument("sobol: at most 3667 dimensions");
  v_.resize(dims);
  for (std::size_t d = 0; d < dims; ++d) {
    std::array<std::uint32_t, 32> m{};  // m[j]: odd integers < 2^(j+1)
    if (d == 0) {
      m.fill(1);
    } else {
      const unsigned poly = Table::polynomial(d - 1);
      const unsigned degree = static_cast<unsigned>(std::bit_width(poly)) - 1;
      for (unsigned k = 0; k < degree; ++k) m[k] = Table::minit(d - 1, k);
      for (unsigned j = degree; j < 32; ++j) {
        std::uint32_t x = m[j - degree];
        unsigned p = poly;
        for (unsigned k = 0; k < degree; ++k, p >>= 1) {
          const unsigned rem = degree - k;
          if (p & 1u) x ^= m[j - rem] << rem;
        }
        m[j] = x;
      }
    }
    for (unsigned j = 0; j < 32; ++j) v_[d][j] = m[j] << (31 - j);
  }
  if (!scramble_) return;
  lms_.resize(dims);
  shift_.resize(dims);
  for (std::size_t d = 0; d < dims; ++d) {
    SplitMix64 rng(SplitMix64::mix(SplitMix64::mix(seed ^ 0x5eed50b01ULL) ^ d));
    for (unsigned i = 0; i < 32; ++i) {
      // Row i decides output bit (31 - i) from input bits 31 .. 31-i: unit diagonal,
      // random bits above it (more significant inputs).
      const std::uint32_t above = i == 0 ? 0u : static_cast<std::uint32_t>(rng.next_u64()) & ~(0xffffffffu >> i);
      lms_[d][i] = above | (1u << (31 - i));
    }
    shift_[d] = static_cast<std::uint32_t>(rng.next_u64());
  }
}

double Sobol::coordinate(std::uint64_t index, std::size_t dim) const {
  std::uint32_t x = 0;
  for (unsigned b = 0; index != 0 && b < 32; ++b, index >>= 1)
    if (index & 1u) x ^= v_[dim][b];
  if (scramble_) {
    std::uint32_t y = 0;
    for (unsigned i = 0; i < 32; ++i)
      if (std::popcount(x & lms_[dim][i]) & 1) y |= 1u << (31 - i);
    x = y ^ shift_[dim];
  }
  return (static_cast<double>(x) + 0.5) * 0x1.0p-32;
}

}  // namespace dlsweep::search
