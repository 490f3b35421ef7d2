#include "trainer/data/datasets.hpp"

#include <fmt/format.h>

#include "trainer/data/cifar10.hpp"
#include "trainer/data/fashion_mnist.hpp"
#include "trainer/data/synthetic.hpp"

namespace dlsweep::trainer::data {

Result<DataSplits> load_data(const DataSpec& spec) {
  DataSplits s;
  if (spec.dataset == "fashion-mnist") {
    const auto dir = spec.dir.empty() ? default_fmnist_dir() : spec.dir;
    auto train = load_fashion_mnist_split(dir, "train", spec.train_subset);
    if (!train) return std::unexpected(train.error());
    auto test = load_fashion_mnist_split(dir, "t10k", spec.test_subset);
    if (!test) return std::unexpected(test.error());
    s.train = std::move(*train);
    s.test = std::move(*test);
  } else if (spec.dataset == "cifar10") {
    const auto dir = spec.dir.empty() ? default_cifar10_dir() : spec.dir;
    auto train = load_cifar10_split(dir, true, spec.train_subset);
    if (!train) return std::unexpected(train.error());
    auto test = load_cifar10_split(dir, false, spec.test_subset);
    if (!test) return std::unexpected(test.error());
    s.train = std::move(*train);
    s.test = std::move(*test);
    const auto stats = channel_stats(s.train);
    standardize_channels(s.train, stats);
    standardize_channels(s.test, stats);
  } else if (spec.dataset == "synthetic") {
    SyntheticSpec ss;
    if (spec.train_subset > 0) ss.train_size = spec.train_subset;
    if (spec.test_subset > 0) ss.test_size = spec.test_subset;
    ss.seed = spec.seed;
    ss.channels = spec.synthetic_channels;
    ss.height = spec.synthetic_height;
    ss.width = spec.synthetic_width;
    ss.features = ss.channels * ss.height * ss.width;
    if (ss.features < 1)
      return fail("synthetic samples would be empty", "dataset", "give the synthetic data a positive shape");
    s = make_synthetic(ss);
  } else {
    return fail(fmt::format("unknown dataset '{}'", spec.dataset), "dataset", "use fashion-mnist, cifar10 or synthetic");
  }
  if (spec.standardize && spec.dataset != "cifar10") {
    auto [mean, sd] = feature_stats(s.train);
    standardize(s.train, mean, sd);
    standardize(s.test, mean, sd);
  }
  if (spec.augment) {
    if (s.train.height < 1 || s.train.width < 1)
      return fail(fmt::format("augment needs image data, but {} has flat samples", s.train.name), "augment",
                  "set augment: false");
    s.train.augment = true;
    s.train.augment_seed = spec.seed;
  }
  return s;
}

}  // namespace dlsweep::trainer::data
