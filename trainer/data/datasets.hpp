// datasets.hpp — the registry of datasets the trainer can load by name (params.json
// `dataset`): "fashion-mnist" (IDX files) and "synthetic". CIFAR-10 will be added here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/result.hpp"
#include "trainer/data/dataset.hpp"

namespace dlsweep::trainer::data {

struct DataSpec {
  std::string dataset = "fashion-mnist";
  std::filesystem::path dir;        ///< empty: default_fmnist_dir()
  std::int64_t train_subset = 0;    ///< 0 = all
  std::int64_t test_subset = 0;     ///< 0 = all
  bool standardize = false;         ///< false: [0,1]; true: (x - mean)/std with train-set stats
  std::uint64_t seed = 0;           ///< for synthetic data
};

/// Loads the train and test splits. Errors name the file and the fix.
Result<DataSplits> load_data(const DataSpec& spec);

}  // namespace dlsweep::trainer::data
