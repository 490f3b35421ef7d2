#include "trainer/optim/tensor_math.hpp"

namespace dlsweep::trainer::optim {

double sum_squares(const float* a, std::int64_t n) {
  return block_reduce<1>(n, [a](std::int64_t lo, std::int64_t hi) {
    double s = 0;
    for (std::int64_t i = lo; i < hi; ++i) s += static_cast<double>(a[i]) * a[i];
    return std::array<double, 1>{s};
  })[0];
}

std::array<double, 2> sum_squares2(const float* a, const float* b, std::int64_t n) {
  return block_reduce<2>(n, [a, b](std::int64_t lo, std::int64_t hi) {
    double sa = 0, sb = 0;
    for (std::int64_t i = lo; i < hi; ++i) {
      sa += static_cast<double>(a[i]) * a[i];
      sb += static_cast<double>(b[i]) * b[i];
    }
    return std::array<double, 2>{sa, sb};
  });
}

}  // namespace dlsweep::trainer::optim
