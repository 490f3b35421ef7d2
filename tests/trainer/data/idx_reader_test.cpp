// The IDX loader on the real Fashion-MNIST files and on broken files written here.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "tests/trainer/test_util.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/data/fashion_mnist.hpp"
#include "trainer/data/idx_reader.hpp"

using namespace dlsweep::trainer;
using dlsweep::trainer::test::TempDir;

namespace {

std::vector<unsigned char> idx_bytes(std::uint32_t magic, std::vector<std::uint32_t> dims, std::size_t data_bytes) {
  std::vector<unsigned char> b;
  auto put = [&](std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
  };
  put(magic);
  for (auto d : dims) put(d);
  for (std::size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<unsigned char>(i % 10));
  return b;
}

void write_gz(const std::filesystem::path& p, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
}

bool mentions(const dlsweep::Error& e, const std::filesystem::path& p) {
  return e.message().find(p.string()) != std::string::npos;
}

}  // namespace

TEST_CASE("the real Fashion-MNIST files load", "[data][fmnist]") {
  const std::filesystem::path dir = DLSWEEP_FMNIST_DIR;
  auto train = data::load_fashion_mnist_split(dir, "train");
  REQUIRE(train);
  CHECK(train->size == 60000);
  CHECK(train->features == 784);
  auto test = data::load_fashion_mnist_split(dir, "t10k");
  REQUIRE(test);
  CHECK(test->size == 10000);
  for (const auto* d : {&*train, &*test}) {
    auto [lo, hi] = std::minmax_element(d->labels.begin(), d->labels.end());
    CHECK(*lo == 0);
    CHECK(*hi == 9);
    REQUIRE(d->byte_backed());
    CHECK(d->pixels.size() == static_cast<std::size_t>(d->size * 784));
    auto [plo, phi] = std::minmax_element(d->pixels.begin(), d->pixels.end());
    CHECK(d->pixel_value[*plo] == 0.0f);
    CHECK(d->pixel_value[*phi] == 1.0f);
  }
  // Subsets read only the first items, identical to the full read.
  auto sub = data::load_fashion_mnist_split(dir, "train", 100);
  REQUIRE(sub);
  CHECK(sub->size == 100);
  CHECK(std::equal(sub->pixels.begin(), sub->pixels.end(), train->pixels.begin()));
  CHECK(std::equal(sub->labels.begin(), sub->labels.end(), train->labels.begin()));
}

TEST_CASE("byte-backed Fashion-MNIST gives the floats of the float path, bit for bit", "[data][fmnist]") {
  // The float path (every byte converted to b/255 at load, statistics over all floats,
  // standardised in place) written out here; the loader's byte path must gather the same bits
  // for training batches, augmented ones and evaluation ranges.
  data::DataSpec spec;
  spec.dataset = "fashion-mnist";
  spec.dir = DLSWEEP_FMNIST_DIR;
  spec.train_subset = 3000;
  spec.test_subset = 500;
  spec.standardize = true;
  auto s = data::load_data(spec);
  REQUIRE(s);
  REQUIRE(s->train.byte_backed());
  auto raw_train = data::load_fashion_mnist_split(spec.dir, "train", spec.train_subset);
  auto raw_test = data::load_fashion_mnist_split(spec.dir, "t10k", spec.test_subset);
  REQUIRE(raw_train);
  REQUIRE(raw_test);
  auto as_floats = [](const data::Dataset& d) {
    data::Dataset f = d;
    f.pixels.clear();
    f.images.resize(d.pixels.size());
    for (std::size_t i = 0; i < d.pixels.size(); ++i) f.images[i] = static_cast<float>(d.pixels[i]) * (1.0f / 255.0f);
    return f;
  };
  data::Dataset ftrain = as_floats(*raw_train), ftest = as_floats(*raw_test);
  auto [mean, sd] = data::feature_stats(ftrain);
  auto [bmean, bsd] = data::feature_stats(*raw_train);
  CHECK(static_cast<float>(bmean) == static_cast<float>(mean));
  CHECK(static_cast<float>(1.0 / bsd) == static_cast<float>(1.0 / sd));
  data::standardize(ftrain, mean, sd);
  data::standardize(ftest, mean, sd);

  const std::int64_t n = 64, f = 784;
  auto bx = kernels::AlignedBuffer(n * f), fx = kernels::AlignedBuffer(n * f);
  std::vector<std::int32_t> bl(n), fl(n);
  std::vector<std::uint32_t> idx(n);
  for (std::int64_t r = 0; r < n; ++r) idx[static_cast<std::size_t>(r)] = static_cast<std::uint32_t>((r * 37 + 11) % 3000);
  for (bool augment : {false, true}) {
    s->train.augment = ftrain.augment = augment;
    s->train.augment_seed = ftrain.augment_seed = 5;
    data::gather(s->train, idx, bx.view(n, f, f), bl.data(), 3);
    data::gather(ftrain, idx, fx.view(n, f, f), fl.data(), 3);
    CHECK(std::memcmp(bx.data(), fx.data(), n * f * sizeof(float)) == 0);
    CHECK(bl == fl);
  }
  data::gather_range(s->test, 100, bx.view(n, f, f), bl.data());
  data::gather_range(ftest, 100, fx.view(n, f, f), fl.data());
  CHECK(std::memcmp(bx.data(), fx.data(), n * f * sizeof(float)) == 0);
  CHECK(bl == fl);
}

TEST_CASE("standardisation uses the training set's statistics", "[data]") {
  data::DataSpec spec;
  spec.dataset = "synthetic";
  spec.train_subset = 500;
  spec.test_subset = 100;
  spec.standardize = true;
  auto s = data::load_data(spec);
  REQUIRE(s);
  auto [mean, sd] = data::feature_stats(s->train);
  CHECK(mean == Approx(0.0).margin(1e-5));
  CHECK(sd == Approx(1.0).epsilon(1e-4));
}

TEST_CASE("a missing IDX file is an error naming the file", "[data][idx]") {
  TempDir tmp;
  auto r = data::load_fashion_mnist_split(tmp.path(), "train");
  REQUIRE_FALSE(r);
  CHECK(mentions(r.error(), tmp / "train-labels-idx1-ubyte.gz"));
  CHECK(r.error().what.find("not found") != std::string::npos);
  CHECK(r.error().fix.find("data_dir") != std::string::npos);
}

TEST_CASE("bad IDX magic is an error naming the file and the expected magic", "[data][idx]") {
  TempDir tmp;
  auto p = tmp / "images.gz";
  write_gz(p, idx_bytes(2049, {5}, 5));  // a labels file where images are expected
  auto r = data::read_idx(p, data::kIdxImagesMagic);
  REQUIRE_FALSE(r);
  CHECK(mentions(r.error(), p));
  CHECK(r.error().what.find("2051") != std::string::npos);
}

TEST_CASE("truncated IDX data is an error naming the file", "[data][idx]") {
  TempDir tmp;
  SECTION("data shorter than the header promises") {
    auto p = tmp / "short.gz";
    write_gz(p, idx_bytes(2051, {100, 28, 28}, 10 * 784));
    auto r = data::read_idx(p, data::kIdxImagesMagic);
    REQUIRE_FALSE(r);
    CHECK(mentions(r.error(), p));
    CHECK(r.error().what.find("truncated") != std::string::npos);
    // Reading only a subset that is present works.
    auto sub = data::read_idx(p, data::kIdxImagesMagic, 10);
    REQUIRE(sub);
    CHECK(sub->items_read == 10);
  }
  SECTION("a gzip stream cut in the middle") {
    auto full = tmp / "full.gz";
    write_gz(full, idx_bytes(2051, {200, 28, 28}, 200 * 784));
    auto bytes = test::read_file(full);
    auto p = tmp / "cut.gz";
    test::write_file(p, bytes.substr(0, bytes.size() / 2));
    auto r = data::read_idx(p, data::kIdxImagesMagic);
    REQUIRE_FALSE(r);
    CHECK(mentions(r.error(), p));
    CHECK(r.error().what.find("truncated") != std::string::npos);
  }
  SECTION("a file shorter than the header") {
    auto p = tmp / "tiny.gz";
    write_gz(p, {0, 0, 8});
    auto r = data::read_idx(p, data::kIdxImagesMagic);
    REQUIRE_FALSE(r);
    CHECK(mentions(r.error(), p));
  }
}

TEST_CASE("image and label counts must match", "[data][idx]") {
  TempDir tmp;
  write_gz(tmp / "train-images-idx3-ubyte.gz", idx_bytes(2051, {5, 2, 2}, 20));
  write_gz(tmp / "train-labels-idx1-ubyte.gz", idx_bytes(2049, {4}, 4));
  auto r = data::load_fashion_mnist_split(tmp.path(), "train");
  REQUIRE_FALSE(r);
  CHECK(r.error().what.find("count mismatch") != std::string::npos);
  CHECK(mentions(r.error(), tmp / "train-labels-idx1-ubyte.gz"));
}

TEST_CASE("labels outside 0-9 are rejected; uncompressed files are accepted", "[data][idx]") {
  TempDir tmp;
  write_gz(tmp / "train-images-idx3-ubyte.gz", idx_bytes(2051, {3, 2, 2}, 12));
  auto labels = idx_bytes(2049, {3}, 0);
  labels.insert(labels.end(), {1, 2, 12});
  test::write_file(tmp / "train-labels-idx1-ubyte", std::string(labels.begin(), labels.end()));  // not gzipped
  auto r = data::load_fashion_mnist_split(tmp.path(), "train");
  REQUIRE_FALSE(r);
  CHECK(r.error().what.find("label 12") != std::string::npos);
  CHECK(mentions(r.error(), tmp / "train-labels-idx1-ubyte"));
}
