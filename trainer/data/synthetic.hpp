// synthetic.hpp — a generated dataset for throughput runs and tests that must not depend on
// files: each class has a random prototype in [0,1)^features, and a sample is its class's
// prototype blended half-and-half with uniform noise — learnable, cheap, deterministic.
// Image-shaped synthetic data (e.g. 3x32x32 for ResNet throughput runs) only records the
// geometry; the values are generated the same way.
#pragma once

#include <cstdint>

#include "trainer/data/dataset.hpp"

namespace dlsweep::trainer::data {

struct SyntheticSpec {
  std::int64_t train_size = 60000;
  std::int64_t test_size = 10000;
  std::int64_t features = 784;       ///< floats per sample (= channels·height·width for images)
  std::int64_t channels = 0, height = 0, width = 0;  ///< image geometry recorded in the Dataset (0: flat)
  std::int64_t classes = 10;
  std::uint64_t seed = 0;
};

DataSplits make_synthetic(const SyntheticSpec& spec);

}  // namespace dlsweep::trainer::data
