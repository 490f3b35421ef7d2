// dataset.hpp — an in-memory classification dataset and the per-step batch gather. Every
// loader (IDX, CIFAR-10, synthetic) produces this: float features already normalised, or
// (Fashion-MNIST) the bytes of the file with the float each byte value stands for.
//
// Invariants: images.size() == size*features, labels.size() == size, 0 <= label < classes;
// for images, features == channels*height*width and each sample is stored CHW (NCHW rows).
// Every rank holds the whole dataset in memory and gathers the indices of its shard of each
// global batch (which indices: the trainer's data order); nothing is read from disk per step.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
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
  std::int64_t channels = 0, height = 0, width = 0;  ///< image geometry; 0 = flat feature vectors
  /// Random crop + horizontal flip applied by gather() (training split only); see augment.hpp.
  bool augment = false;
  std::uint64_t augment_seed = 0;

  /// Byte-backed datasets (Fashion-MNIST): `pixels` holds [size, features] bytes as the file
  /// has them, `pixel_value[b]` the float that byte b stands for (b/255, then standardised),
  /// and `images` stays empty. A gathered batch holds exactly the floats the float path would
  /// (each value is a function of its byte alone), at a quarter of the memory and without
  /// converting the whole set at start-up (bench: the start-up share of time to target).
  std::vector<std::uint8_t> pixels;
  std::array<float, 256> pixel_value{};
  bool byte_backed() const { return !pixels.empty(); }

  /// Float datasets only (byte-backed ones: copy_sample).
  const float* sample(std::int64_t i) const { return images.data() + i * features; }
  /// Writes sample i's `features` floats to out (either kind).
  void copy_sample(std::int64_t i, float* out) const;
};

struct DataSplits {
  Dataset train, test;
};

/// Copies samples indices[r] into row r of x (x.cols == features) and their labels. When
/// d.augment is set, each sample is randomly cropped and flipped (augment.hpp) with the
/// randomness of (d.augment_seed, epoch, index), so a run is reproducible whatever the
/// batch size, rank count or order of calls.
void gather(const Dataset& d, std::span<const std::uint32_t> indices, kernels::MatrixView x, std::int32_t* labels,
            std::int64_t epoch = 0);

/// Copies the contiguous samples [first, first + x.rows) (evaluation).
void gather_range(const Dataset& d, std::int64_t first, kernels::MatrixView x, std::int32_t* labels);

/// Standardises every feature value: x = (x - mean)/std with one mean/std over all values of
/// `stats_from` (the training set), applied to `d`. Returns {mean, std}.
std::pair<double, double> feature_stats(const Dataset& stats_from);
void standardize(Dataset& d, double mean, double std_dev);

/// Per-channel mean and standard deviation of an image dataset (one pair per channel).
std::vector<std::pair<double, double>> channel_stats(const Dataset& d);
/// x = (x - mean_c)/std_c per channel.
void standardize_channels(Dataset& d, const std::vector<std::pair<double, double>>& stats);

}  // namespace dlsweep::trainer::data
