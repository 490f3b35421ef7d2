// dataset.hpp — an in-memory classification dataset (features already normalised to floats)
// and the per-step batch gather. Every loader (IDX, synthetic, CIFAR later) produces this.
//
// Invariants: images.size() == size*features, labels.size() == size, 0 <= label < classes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trainer/kernels/matrix.hpp"

namespace dlsweep::trainer::data {

struct Dataset {
  std::string name;                 ///< "fashion-mnist/train", "synthetic/test", ...
  std::int64_t size = 0;            ///< number of samples
  std::int64_t features = 0;        ///< floats per sample
  std::int64_t classes = 0;
  std::vector<float> images;        ///< [size, features] row-major
  std::vector<std::int32_t> labels; ///< [size]

  const float* sample(std::int64_t i) const { return images.data() + i * features; }
};

struct DataSplits {
  Dataset train, test;
};

/// Copies samples indices[r] into row r of x (x.cols == features) and their labels.
void gather(const Dataset& d, std::span<const std::uint32_t> indices, kernels::MatrixView x, std::int32_t* labels);

/// Copies the contiguous samples [first, first + x.rows) (evaluation).
void gather_range(const Dataset& d, std::int64_t first, kernels::MatrixView x, std::int32_t* labels);

/// Standardises every feature value: x = (x - mean)/std with one mean/std over all values of
/// `stats_from` (the training set), applied to `d`. Returns {mean, std}.
std::pair<double, double> feature_stats(const Dataset& stats_from);
void standardize(Dataset& d, double mean, double std_dev);

}  // namespace dlsweep::trainer::data
