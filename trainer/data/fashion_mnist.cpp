#include "trainer/data/fashion_mnist.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "trainer/data/idx_cache.hpp"
#include "trainer/data/idx_reader.hpp"

#ifndef DLSWEEP_FMNIST_DIR
#define DLSWEEP_FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#endif

namespace dlsweep::trainer::data {

std::filesystem::path default_fmnist_dir() {
  if (const char* env = std::getenv("DLSWEEP_FMNIST_DIR"); env && *env) return env;
  return DLSWEEP_FMNIST_DIR;
}

std::filesystem::path idx_file(const std::filesystem::path& dir, const std::string& name) {
  std::error_code ec;
  auto gz = dir / (name + ".gz");
  auto plain = dir / name;
  if (!std::filesystem::exists(gz, ec) && std::filesystem::exists(plain, ec)) return plain;
  return gz;
}

Result<Dataset> load_fashion_mnist_split(const std::filesystem::path& dir, const std::string& prefix,
                                         std::int64_t max_items) {
  const auto images_path = idx_file(dir, prefix + "-images-idx3-ubyte");
  const auto labels_path = idx_file(dir, prefix + "-labels-idx1-ubyte");

  // Compare the counts in both headers before reading the data (a subset would hide a mismatch).
  auto label_dims = read_idx_header(labels_path, kIdxLabelsMagic);
  if (!label_dims) return std::unexpected(label_dims.error());
  auto images = read_idx_cached(images_path, kIdxImagesMagic, max_items);
  if (!images) return std::unexpected(images.error());
  if ((*label_dims)[0] != images->dims[0])
    return fail(fmt::format("count mismatch: {} has {} images but {} has {} labels", images_path.string(),
                            images->dims[0], labels_path.string(), (*label_dims)[0]),
                labels_path.string(), "use the image and label files of the same split and release");
  auto labels = read_idx_cached(labels_path, kIdxLabelsMagic, max_items);
  if (!labels) return std::unexpected(labels.error());

  Dataset d;
  d.name = "fashion-mnist/" + std::string(prefix == "t10k" ? "test" : prefix);
  d.size = images->items_read;
  d.features = std::int64_t{images->dims[1]} * images->dims[2];
  d.channels = 1;
  d.height = images->dims[1];
  d.width = images->dims[2];
  d.classes = kFashionMnistClasses;
  constexpr float kScale = 1.0f / 255.0f;
  for (int b = 0; b < 256; ++b) d.pixel_value[static_cast<std::size_t>(b)] = static_cast<float>(b) * kScale;
  d.pixels = std::move(images->data);  // byte-backed (dataset.hpp): converted per batch
  d.labels.resize(static_cast<std::size_t>(d.size));
  for (std::int64_t i = 0; i < d.size; ++i) {
    const std::uint8_t l = labels->data[static_cast<std::size_t>(i)];
    if (l >= d.classes)
      return fail(fmt::format("label {} of item {} is outside [0, {})", l, i, d.classes), labels_path.string(),
                  "re-download the file; this loader expects 10-class (Fashion-)MNIST labels");
    d.labels[static_cast<std::size_t>(i)] = l;
  }
  return d;
}

}  // namespace dlsweep::trainer::data
