#include "trainer/data/datasets.hpp"

#include <fmt/format.h>

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
  } else if (spec.dataset == "synthetic") {
    SyntheticSpec ss;
    if (spec.train_subset > 0) ss.train_size = spec.train_subset;
    if (spec.test_subset > 0) ss.test_size = spec.test_subset;
    ss.seed = spec.seed;
    s = make_synthetic(ss);
  } else {
    return fail(fmt::format("unknown dataset '{}'", spec.dataset), "dataset", "use fashion-mnist or synthetic");
  }
  if (spec.standardize) {
    auto [mean, sd] = feature_stats(s.train);
    standardize(s.train, mean, sd);
    standardize(s.test, mean, sd);
  }
  return s;
}

}  // namespace dlsweep::trainer::data
