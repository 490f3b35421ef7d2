// The inflated-IDX cache (trainer/data/idx_cache.hpp): filled by a full read, used after,
// never stale when the source changes, off on request, harmless when it cannot be written
// or is damaged.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/scoped_env.hpp"
#include "tests/trainer/test_util.hpp"
#include "trainer/data/idx_cache.hpp"

using namespace dlsweep::trainer;
using dlsweep::trainer::test::TempDir;
namespace fs = std::filesystem;
using test_support::ScopedEnv;

namespace {


// An images file of n 2x2 items whose bytes start at `first`.
void write_images(const fs::path& p, std::uint32_t n, unsigned char first) {
  std::vector<unsigned char> b;
  for (std::uint32_t v : {2051u, n, 2u, 2u})
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
  for (std::uint32_t i = 0; i < 4 * n; ++i) b.push_back(static_cast<unsigned char>(first + i));
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f);
  REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  gzclose(f);
}

std::size_t count_files(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("idx cache: a full read fills it, the next read uses it", "[data][idx][cache]") {
  TempDir tmp;
  const auto cache = tmp.path() / "cache", src = tmp.path() / "train-images-idx3-ubyte.gz";
  ScopedEnv env("DLSWEEP_DATA_CACHE", cache.string());
  write_images(src, 6, 10);
  auto a = data::read_idx_cached(src, data::kIdxImagesMagic);
  REQUIRE(a);
  CHECK(a->data.front() == 10);
  const auto file = data::idx_cache_file(cache, src);
  REQUIRE(file);
  REQUIRE(fs::is_regular_file(*file));
  CHECK(count_files(cache) == 1);
  // The cache is what the next read reads: a planted different (valid) file there is returned.
  write_images(tmp.path() / "planted.gz", 6, 200);
  auto planted = data::read_idx(tmp.path() / "planted.gz", data::kIdxImagesMagic);
  REQUIRE(planted);
  {
    gzFile in = gzopen((tmp.path() / "planted.gz").c_str(), "rb");
    std::vector<char> raw(4 * 4 + 24);
    REQUIRE(gzread(in, raw.data(), static_cast<unsigned>(raw.size())) == static_cast<int>(raw.size()));
    gzclose(in);
    std::ofstream(*file, std::ios::binary).write(raw.data(), static_cast<std::streamsize>(raw.size()));
  }
  auto b = data::read_idx_cached(src, data::kIdxImagesMagic);
  REQUIRE(b);
  CHECK(b->data == planted->data);
  // A subset read of a cached file reads the first items of it.
  auto sub = data::read_idx_cached(src, data::kIdxImagesMagic, 2);
  REQUIRE(sub);
  CHECK(sub->items_read == 2);
  CHECK(sub->data.front() == 200);
}

TEST_CASE("idx cache: a changed source is read afresh, never the stale copy", "[data][idx][cache]") {
  TempDir tmp;
  const auto cache = tmp.path() / "cache", src = tmp.path() / "t10k-images-idx3-ubyte.gz";
  ScopedEnv env("DLSWEEP_DATA_CACHE", cache.string());
  write_images(src, 5, 1);
  auto a = data::read_idx_cached(src, data::kIdxImagesMagic);
  REQUIRE(a);
  const auto first_file = data::idx_cache_file(cache, src);
  // Same size, same inode (rewritten in place), likely the same timestamp: other content.
  write_images(src, 5, 77);
  auto b = data::read_idx_cached(src, data::kIdxImagesMagic);
  REQUIRE(b);
  CHECK(b->data.front() == 77);
  CHECK(data::idx_cache_file(cache, src) != first_file);
}

TEST_CASE("idx cache: off, unwritable, subsets on a miss, damaged", "[data][idx][cache]") {
  TempDir tmp;
  const auto src = tmp.path() / "x-images-idx3-ubyte.gz";
  write_images(src, 4, 3);
  SECTION("DLSWEEP_DATA_CACHE=off writes nothing") {
    ScopedEnv env("DLSWEEP_DATA_CACHE", "off");
    CHECK_FALSE(data::idx_cache_dir());
    auto a = data::read_idx_cached(src, data::kIdxImagesMagic);
    REQUIRE(a);
    CHECK(a->data.front() == 3);
  }
  SECTION("a cache folder that cannot be created is skipped") {
    std::ofstream(tmp.path() / "a-file") << "x";
    ScopedEnv env("DLSWEEP_DATA_CACHE", (tmp.path() / "a-file" / "cache").string());
    auto a = data::read_idx_cached(src, data::kIdxImagesMagic);
    REQUIRE(a);
    CHECK(a->data.front() == 3);
  }
  SECTION("a subset that misses reads the source and leaves the cache empty") {
    const auto cache = tmp.path() / "cache";
    ScopedEnv env("DLSWEEP_DATA_CACHE", cache.string());
    auto a = data::read_idx_cached(src, data::kIdxImagesMagic, 2);
    REQUIRE(a);
    CHECK(a->items_read == 2);
    CHECK(count_files(cache) == 0);
  }
  SECTION("a truncated cache file is replaced from the source") {
    const auto cache = tmp.path() / "cache";
    ScopedEnv env("DLSWEEP_DATA_CACHE", cache.string());
    REQUIRE(data::read_idx_cached(src, data::kIdxImagesMagic));
    const auto file = data::idx_cache_file(cache, src);
    REQUIRE(file);
    fs::resize_file(*file, 20);
    auto a = data::read_idx_cached(src, data::kIdxImagesMagic);
    REQUIRE(a);
    CHECK(a->items_read == 4);
    CHECK(a->data.back() == 3 + 15);
    CHECK(fs::file_size(*file) == 16 + 16);
  }
}
