#include "trainer/data/cifar10.hpp"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace dlsweep::trainer::data {

namespace {

constexpr const char* kFix = "point data_dir (params.json) or $DLSWEEP_CIFAR10_DIR at the folder holding "
                             "data_batch_1.bin … data_batch_5.bin and test_batch.bin (the 'CIFAR-10 binary version')";

std::filesystem::path resolve_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto nested = dir / "cifar-10-batches-bin";
  if (!std::filesystem::exists(dir / "test_batch.bin", ec) && std::filesystem::exists(nested / "test_batch.bin", ec))
    return nested;
  return dir;
}

/// Appends up to `want` records of `file` (all when want <= 0) to d.
Status read_batch(const std::filesystem::path& file, std::int64_t want, Dataset& d) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return fail("file not found", file.string(), kFix);
  const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(file, ec));
  if (ec) return fail("cannot read the file size: " + ec.message(), file.string(), "check its permissions");
  if (bytes == 0) return fail("file is empty", file.string(), "re-download the CIFAR-10 binary version");
  if (bytes % kCifarRecord != 0)
    return fail(fmt::format("file is truncated: {} bytes is not a whole number of {}-byte records ({} records and "
                            "{} bytes; {} bytes missing from the last record)",
                            bytes, kCifarRecord, bytes / kCifarRecord, bytes % kCifarRecord,
                            kCifarRecord - bytes % kCifarRecord),
                file.string(), "re-download the CIFAR-10 binary version");
  std::int64_t records = bytes / kCifarRecord;
  if (want > 0 && want < records) records = want;
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail("cannot open the file", file.string(), "check its permissions");
  std::vector<unsigned char> buf(static_cast<std::size_t>(records * kCifarRecord));
  if (!in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size())))
    return fail("read error", file.string(), "check the file and the disk");
  const std::int64_t pixels = kCifarRecord - 1;
  constexpr float kScale = 1.0f / 255.0f;
  const std::size_t first = d.images.size();
  d.images.resize(first + static_cast<std::size_t>(records * pixels));
  for (std::int64_t r = 0; r < records; ++r) {
    const unsigned char* rec = buf.data() + r * kCifarRecord;
    if (rec[0] >= kCifarClasses)
      return fail(fmt::format("label {} of record {} is outside [0, {})", rec[0], r, kCifarClasses), file.string(),
                  "this is not a CIFAR-10 file (CIFAR-100 records have two label bytes)");
    d.labels.push_back(rec[0]);
    float* out = d.images.data() + first + static_cast<std::size_t>(r * pixels);
    for (std::int64_t p = 0; p < pixels; ++p) out[p] = static_cast<float>(rec[1 + p]) * kScale;
  }
  d.size += records;
  return {};
}

}  // namespace

std::filesystem::path default_cifar10_dir() {
  if (const char* env = std::getenv("DLSWEEP_CIFAR10_DIR"); env && *env) return env;
  return {};
}

Result<Dataset> load_cifar10_split(const std::filesystem::path& dir_in, bool train, std::int64_t max_items) {
  if (dir_in.empty()) return fail("no CIFAR-10 directory given", "data_dir", kFix);
  const auto dir = resolve_dir(dir_in);
  std::vector<std::filesystem::path> files;
  if (train)
    for (int i = 1; i <= 5; ++i) files.push_back(dir / fmt::format("data_batch_{}.bin", i));
  else
    files.push_back(dir / "test_batch.bin");
  // Every file must be there even when a subset needs only the first: a missing batch is
  // an installation problem worth reporting before a long run.
  std::error_code ec;
  for (const auto& f : files)
    if (!std::filesystem::exists(f, ec)) return fail("file not found", f.string(), kFix);
  Dataset d;
  d.name = train ? "cifar10/train" : "cifar10/test";
  d.features = kCifarRecord - 1;
  d.classes = kCifarClasses;
  d.channels = kCifarChannels;
  d.height = d.width = kCifarSide;
  for (const auto& f : files) {
    const std::int64_t want = max_items > 0 ? max_items - d.size : 0;
    if (max_items > 0 && want <= 0) break;
    if (auto s = read_batch(f, want, d); !s) return std::unexpected(s.error());
  }
  return d;
}

}  // namespace dlsweep::trainer::data
