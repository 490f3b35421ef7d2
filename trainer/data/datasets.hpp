// datasets.hpp — the registry of datasets the trainer can load by name (params.json
// `dataset`): "fashion-mnist" (IDX files), "cifar10" (binary batches) and "synthetic".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/result.hpp"
#include "trainer/data/dataset.hpp"

namespace dlsweep::trainer::data {

struct DataSpec {
  std::string dataset = "fashion-mnist";
  std::filesystem::path dir;        ///< empty: default_fmnist_dir() / default_cifar10_dir()
  std::int64_t train_subset = 0;    ///< 0 = all
  std::int64_t test_subset = 0;     ///< 0 = all
  bool standardize = false;         ///< false: [0,1]; true: (x - mean)/std with train-set stats
  std::uint64_t seed = 0;           ///< for synthetic data and augmentation
  bool augment = false;             ///< random crop (pad 4) + horizontal flip of training images
  /// Synthetic data's sample shape [channels, height, width] (the model's input; 1x28x28 by default).
  std::int64_t synthetic_channels = 1, synthetic_height = 28, synthetic_width = 28;
};

/// Loads the train and test splits. Errors name the file and the fix. CIFAR-10 is always
/// standardised per channel with the (loaded) training split's mean and standard deviation;
/// the other datasets only when spec.standardize.
Result<DataSplits> load_data(const DataSpec& spec);

}  // namespace dlsweep::trainer::data
