#include "trainer/data/dataset.hpp"

#include "trainer/data/augment.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace dlsweep::trainer::data {

void Dataset::copy_sample(std::int64_t i, float* out) const {
  if (byte_backed()) {
    const std::uint8_t* p = pixels.data() + i * features;
    for (std::int64_t j = 0; j < features; ++j) out[j] = pixel_value[p[j]];
  } else {
    std::memcpy(out, sample(i), static_cast<std::size_t>(features) * sizeof(float));
  }
}

void gather(const Dataset& d, std::span<const std::uint32_t> indices, kernels::MatrixView x, std::int32_t* labels,
            std::int64_t epoch) {
  if (d.augment) {
    gather_augmented(d, indices, epoch, x, labels);
    return;
  }
  // Rows are independent: split across the compute threads once a batch is large enough to
  // pay for the fork (the rows' bytes come from all over the training set).
  const auto rows = static_cast<std::int64_t>(indices.size());
#pragma omp parallel for schedule(static) if (rows * d.features >= (1 << 15))
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint32_t i = indices[static_cast<std::size_t>(r)];
    d.copy_sample(i, x.row(r));
    labels[r] = d.labels[i];
  }
}

void gather_range(const Dataset& d, std::int64_t first, kernels::MatrixView x, std::int32_t* labels) {
#pragma omp parallel for schedule(static) if (x.rows * d.features >= (1 << 15))
  for (std::int64_t r = 0; r < x.rows; ++r) {
    d.copy_sample(first + r, x.row(r));
    labels[r] = d.labels[static_cast<std::size_t>(first + r)];
  }
}

std::pair<double, double> feature_stats(const Dataset& d) {
  double sum = 0, sq = 0, n = 0;
  if (d.byte_backed()) {
    // The same sums over the same float values, grouped by byte value: a count per byte, then
    // count × value (exact in double for counts below 2^29) added in byte order.
    // Four partial histograms: consecutive equal bytes (the background) would otherwise make
    // every increment wait for the previous one to the same counter.
    std::array<std::array<std::uint64_t, 256>, 4> part{};
    const std::uint8_t* p = d.pixels.data();
    const std::size_t n_px = d.pixels.size(), n4 = n_px / 4 * 4;
    for (std::size_t i = 0; i < n4; i += 4) {
      ++part[0][p[i]];
      ++part[1][p[i + 1]];
      ++part[2][p[i + 2]];
      ++part[3][p[i + 3]];
    }
    for (std::size_t i = n4; i < n_px; ++i) ++part[0][p[i]];
    std::array<std::uint64_t, 256> count{};
    for (const auto& h : part)
      for (int b = 0; b < 256; ++b) count[static_cast<std::size_t>(b)] += h[static_cast<std::size_t>(b)];
    for (int b = 0; b < 256; ++b) {
      const double v = d.pixel_value[static_cast<std::size_t>(b)], c = static_cast<double>(count[b]);
      sum += c * v;
      sq += c * (v * v);
    }
    n = static_cast<double>(d.pixels.size());
  } else {
    for (float v : d.images) {
      sum += v;
      sq += static_cast<double>(v) * v;
    }
    n = static_cast<double>(d.images.size());
  }
  if (n == 0) return {0.0, 1.0};
  const double mean = sum / n;
  const double var = sq / n - mean * mean;
  return {mean, var > 0 ? std::sqrt(var) : 1.0};
}

void standardize(Dataset& d, double mean, double std_dev) {
  const float m = static_cast<float>(mean), inv = static_cast<float>(1.0 / std_dev);
  if (d.byte_backed()) {
    for (float& v : d.pixel_value) v = (v - m) * inv;  // each byte's value, as the float path maps it
    return;
  }
  for (float& v : d.images) v = (v - m) * inv;
}

std::vector<std::pair<double, double>> channel_stats(const Dataset& d) {
  const std::int64_t c = std::max<std::int64_t>(1, d.channels), plane = d.features / c;
  std::vector<std::pair<double, double>> out;
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < d.size; ++i) {
      const float* p = d.sample(i) + ch * plane;
      for (std::int64_t j = 0; j < plane; ++j) {
        sum += p[j];
        sq += static_cast<double>(p[j]) * p[j];
      }
    }
    const double n = static_cast<double>(d.size * plane);
    const double mean = n > 0 ? sum / n : 0.0, var = n > 0 ? sq / n - mean * mean : 0.0;
    out.emplace_back(mean, var > 0 ? std::sqrt(var) : 1.0);
  }
  return out;
}

void standardize_channels(Dataset& d, const std::vector<std::pair<double, double>>& stats) {
  const std::int64_t c = static_cast<std::int64_t>(stats.size()), plane = d.features / c;
  for (std::int64_t i = 0; i < d.size; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float m = static_cast<float>(stats[static_cast<std::size_t>(ch)].first),
                  inv = static_cast<float>(1.0 / stats[static_cast<std::size_t>(ch)].second);
      float* p = d.images.data() + i * d.features + ch * plane;
      for (std::int64_t j = 0; j < plane; ++j) p[j] = (p[j] - m) * inv;
    }
}

}  // namespace dlsweep::trainer::data
