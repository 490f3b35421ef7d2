// fashion_mnist.hpp — loads Fashion-MNIST (or MNIST: same files) from a directory of IDX
// files: train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-… for the test
// split. Pixels become floats in [0, 1]. Checks: magic numbers, 3-D images, 1-D labels,
// equal counts in the image and label files, labels in [0, 10).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/result.hpp"
#include "trainer/data/dataset.hpp"

namespace dlsweep::trainer::data {

inline constexpr std::int64_t kFashionMnistClasses = 10;

/// The directory used when params.json has no data_dir: $DLSWEEP_FMNIST_DIR, else the
/// compiled-in default (the Debian package's /usr/share/datasets/fashion-mnist).
std::filesystem::path default_fmnist_dir();

/// The path of one of the four files; prefers NAME.gz, falls back to an uncompressed NAME.
std::filesystem::path idx_file(const std::filesystem::path& dir, const std::string& name);

/// Loads one split: `prefix` is "train" or "t10k". `max_items` > 0 reads only the first items.
Result<Dataset> load_fashion_mnist_split(const std::filesystem::path& dir, const std::string& prefix,
                                         std::int64_t max_items = 0);

}  // namespace dlsweep::trainer::data
