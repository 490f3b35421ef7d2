// The CIFAR-10 binary loader on small files written here in the official format, the
// crop+flip augmentation, and image-shaped synthetic data.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "tests/trainer/test_util.hpp"
#include "trainer/data/augment.hpp"
#include "trainer/data/cifar10.hpp"
#include "trainer/data/datasets.hpp"

using namespace dlsweep::trainer;
namespace fs = std::filesystem;

namespace {

/// A record: label byte, then 3072 pixel bytes; pixel (c, y, x) of record r is (r + 7c + y + 3x) % 256.
std::string record(int r, int label) {
  std::string s(1, static_cast<char>(label));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) s.push_back(static_cast<char>((r + 7 * c + y + 3 * x) % 256));
  return s;
}

/// data_batch_1..5.bin with `per_batch` records each (labels r % 10), test_batch.bin with 2.
void write_cifar(const fs::path& dir, int per_batch) {
  fs::create_directories(dir);
  int r = 0;
  for (int b = 1; b <= 5; ++b) {
    std::string s;
    for (int i = 0; i < per_batch; ++i, ++r) s += record(r, r % 10);
    test::write_file(dir / ("data_batch_" + std::to_string(b) + ".bin"), s);
  }
  test::write_file(dir / "test_batch.bin", record(100, 9) + record(101, 0));
}

float pixel(int r, int c, int y, int x) { return static_cast<float>((r + 7 * c + y + 3 * x) % 256) / 255.0f; }

}  // namespace

TEST_CASE("CIFAR-10 binary batches load as CHW images in [0, 1]", "[data]") {
  test::TempDir tmp;
  write_cifar(tmp.path(), 3);
  auto train = data::load_cifar10_split(tmp.path(), true);
  REQUIRE(train);
  CHECK(train->size == 15);
  CHECK(train->features == 3072);
  CHECK(train->channels == 3);
  CHECK(train->height == 32);
  CHECK(train->width == 32);
  CHECK(train->classes == 10);
  CHECK(train->labels[13] == 3);
  // Record 13 is the second of data_batch_5.bin; pixel (c=2, y=5, x=31).
  CHECK(train->sample(13)[2 * 1024 + 5 * 32 + 31] == Approx(pixel(13, 2, 5, 31)).epsilon(1e-6));
  CHECK(train->sample(4)[0] == Approx(pixel(4, 0, 0, 0)).epsilon(1e-6));
  auto test = data::load_cifar10_split(tmp.path(), false);
  REQUIRE(test);
  CHECK(test->size == 2);
  CHECK(test->labels[0] == 9);
  // A subset reads across batch files in order.
  auto sub = data::load_cifar10_split(tmp.path(), true, 4);
  REQUIRE(sub);
  CHECK(sub->size == 4);
  CHECK(sub->sample(3)[1] == Approx(pixel(3, 0, 0, 1)).epsilon(1e-6));
}

TEST_CASE("CIFAR-10 files inside the archive's cifar-10-batches-bin folder are found", "[data]") {
  test::TempDir tmp;
  write_cifar(tmp.path() / "cifar-10-batches-bin", 1);
  auto train = data::load_cifar10_split(tmp.path(), true);
  REQUIRE(train);
  CHECK(train->size == 5);
}

TEST_CASE("CIFAR-10 errors name the file and the fix", "[data]") {
  test::TempDir tmp;
  write_cifar(tmp.path(), 2);
  SECTION("missing batch") {
    fs::remove(tmp.path() / "data_batch_4.bin");
    auto d = data::load_cifar10_split(tmp.path(), true, 1);  // even when a subset would not need it
    REQUIRE_FALSE(d);
    CHECK(d.error().where.find("data_batch_4.bin") != std::string::npos);
    CHECK(d.error().fix.find("data_dir") != std::string::npos);
  }
  SECTION("truncated record") {
    test::write_file(tmp.path() / "test_batch.bin", record(0, 1) + record(1, 2).substr(0, 3000));
    auto d = data::load_cifar10_split(tmp.path(), false);
    REQUIRE_FALSE(d);
    CHECK(d.error().what.find("truncated") != std::string::npos);
    CHECK(d.error().what.find("73 bytes missing") != std::string::npos);
    CHECK(d.error().where.find("test_batch.bin") != std::string::npos);
  }
  SECTION("empty file") {
    test::write_file(tmp.path() / "data_batch_1.bin", "");
    auto d = data::load_cifar10_split(tmp.path(), true);
    REQUIRE_FALSE(d);
    CHECK(d.error().what.find("empty") != std::string::npos);
  }
  SECTION("label out of range") {
    test::write_file(tmp.path() / "test_batch.bin", record(0, 10));
    auto d = data::load_cifar10_split(tmp.path(), false);
    REQUIRE_FALSE(d);
    CHECK(d.error().what.find("label 10") != std::string::npos);
  }
  SECTION("no directory") {
    auto d = data::load_cifar10_split({}, true);
    REQUIRE_FALSE(d);
    CHECK(d.error().where == "data_dir");
  }
}

TEST_CASE("load_data standardises CIFAR-10 per channel with training statistics", "[data]") {
  test::TempDir tmp;
  write_cifar(tmp.path(), 4);
  data::DataSpec spec;
  spec.dataset = "cifar10";
  spec.dir = tmp.path();
  auto s = data::load_data(spec);
  REQUIRE(s);
  for (const auto& [mean, sd] : data::channel_stats(s->train)) {
    CHECK(mean == Approx(0.0).margin(1e-5));
    CHECK(sd == Approx(1.0).epsilon(1e-4));
  }
  CHECK(s->test.size == 2);
  CHECK_FALSE(s->test.augment);
}

TEST_CASE("crop offsets and flips are seeded per (seed, epoch, index) and cover the range", "[data]") {
  const auto a = data::draw_crop_flip(1, 3, 17), b = data::draw_crop_flip(1, 3, 17);
  CHECK(a.dy == b.dy);
  CHECK(a.dx == b.dx);
  CHECK(a.flip == b.flip);
  std::set<std::int64_t> dys, dxs;
  int flips = 0, same_as_next_epoch = 0;
  for (std::uint32_t i = 0; i < 2000; ++i) {
    const auto c = data::draw_crop_flip(5, 0, i), d = data::draw_crop_flip(5, 1, i);
    REQUIRE(c.dy >= 0);
    REQUIRE(c.dy <= 2 * data::kAugmentPad);
    REQUIRE(c.dx <= 2 * data::kAugmentPad);
    dys.insert(c.dy);
    dxs.insert(c.dx);
    flips += c.flip;
    same_as_next_epoch += c.dy == d.dy && c.dx == d.dx && c.flip == d.flip;
  }
  CHECK(dys.size() == 9);
  CHECK(dxs.size() == 9);
  CHECK(flips > 900);
  CHECK(flips < 1100);
  CHECK(same_as_next_epoch < 40);  // 1/162 expected by chance
}

TEST_CASE("crop_flip shifts with zero padding and mirrors", "[data]") {
  // One channel, 3x4: value 10y + x + 1.
  std::vector<float> img(12), out(12);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) img[static_cast<std::size_t>(y * 4 + x)] = static_cast<float>(10 * y + x + 1);
  const std::int64_t p = data::kAugmentPad;
  data::crop_flip(img.data(), 1, 3, 4, {p, p, false}, out.data());
  CHECK(out == img);
  data::crop_flip(img.data(), 1, 3, 4, {p + 1, p - 1, false}, out.data());  // down one row, right one column
  CHECK(out == std::vector<float>{0, 11, 12, 13, 0, 21, 22, 23, 0, 0, 0, 0});
  data::crop_flip(img.data(), 1, 3, 4, {p, p, true}, out.data());
  CHECK(out == std::vector<float>{4, 3, 2, 1, 14, 13, 12, 11, 24, 23, 22, 21});
  data::crop_flip(img.data(), 1, 3, 4, {p, p + 1, true}, out.data());  // crop shifted left, then mirrored
  CHECK(out == std::vector<float>{0, 4, 3, 2, 0, 14, 13, 12, 0, 24, 23, 22});
}

TEST_CASE("augmented gather depends on (seed, epoch, sample), not on the batch layout", "[data]") {
  data::DataSpec spec;
  spec.dataset = "synthetic";
  spec.train_subset = 64;
  spec.test_subset = 8;
  spec.synthetic_channels = 3;
  spec.synthetic_height = spec.synthetic_width = 32;
  spec.augment = true;
  spec.seed = 9;
  auto s = data::load_data(spec);
  REQUIRE(s);
  CHECK(s->train.features == 3072);
  CHECK(s->train.channels == 3);
  CHECK(s->train.augment);
  CHECK_FALSE(s->test.augment);
  auto x1 = kernels::make_matrix_buffer(4, 3072), x2 = kernels::make_matrix_buffer(2, 3072),
       x3 = kernels::make_matrix_buffer(1, 3072);
  const auto v1 = x1.view(4, 3072, kernels::padded_ld(3072)), v2 = x2.view(2, 3072, kernels::padded_ld(3072)),
             v3 = x3.view(1, 3072, kernels::padded_ld(3072));
  std::vector<std::int32_t> l(4);
  const std::uint32_t a[4] = {5, 9, 12, 40}, b[2] = {40, 12};
  data::gather(s->train, a, v1, l.data(), 2);
  data::gather(s->train, b, v2, l.data(), 2);
  CHECK(std::equal(v1.row(3), v1.row(3) + 3072, v2.row(0)));
  CHECK(std::equal(v1.row(2), v1.row(2) + 3072, v2.row(1)));
  CHECK(l[0] == s->train.labels[40]);
  const std::uint32_t c[1] = {40};
  data::gather(s->train, c, v3, l.data(), 3);  // another epoch: another crop (almost surely)
  CHECK_FALSE(std::equal(v1.row(3), v1.row(3) + 3072, v3.row(0)));
  // Without augmentation the same call copies the sample as stored.
  s->train.augment = false;
  data::gather(s->train, c, v3, l.data(), 3);
  CHECK(std::equal(v3.row(0), v3.row(0) + 3072, s->train.sample(40)));
}
