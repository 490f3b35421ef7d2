#include "trainer/data/idx_cache.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "common/atomic_file.hpp"
#include "common/hash.hpp"

namespace dlsweep::trainer::data {

std::optional<std::filesystem::path> idx_cache_dir() {
  if (const char* v = std::getenv("DLSWEEP_DATA_CACHE"); v && *v) {
    if (std::string_view(v) == "off") return std::nullopt;
    return std::filesystem::path(v);
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "dlsweep" / "idx";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "dlsweep" / "idx";
  return std::nullopt;
}

std::optional<std::filesystem::path> idx_cache_file(const std::filesystem::path& dir,
                                                    const std::filesystem::path& source) {
  std::error_code ec;
  const auto canonical = std::filesystem::canonical(source, ec);
  struct stat st{};
  if (ec || ::stat(canonical.c_str(), &st) != 0) return std::nullopt;
  // gzip's trailer: the CRC-32 and size of the uncompressed data, which change with the content
  // even when a rewrite keeps the size and lands within the file system's timestamp granularity.
  std::string trailer;
  if (std::FILE* f = std::fopen(canonical.c_str(), "rb")) {
    char t[8];
    if (st.st_size >= 18 && std::fseek(f, -8, SEEK_END) == 0 && std::fread(t, 1, 8, f) == 8) trailer.assign(t, 8);
    std::fclose(f);
  }
  const std::string identity =
      fmt::format("{}\n{}\n{}.{:09}\n{}\n{}\n", canonical.string(), static_cast<long long>(st.st_size),
                  static_cast<long long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec),
                  static_cast<unsigned long long>(st.st_ino), static_cast<unsigned long long>(st.st_dev)) +
      trailer;
  return dir / fmt::format("{}-{:016x}.idx", source.stem().string(), fnv1a64(identity));
}

namespace {

// The IDX file an IdxArray came from: big-endian magic and sizes, then the data.
std::string idx_bytes(std::uint32_t magic, const IdxArray& a) {
  std::string out;
  out.reserve(4 * (1 + a.dims.size()) + a.data.size());
  auto put = [&](std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
  };
  put(magic);
  for (auto d : a.dims) put(d);
  out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  return out;
}

}  // namespace

Result<IdxArray> read_idx_cached(const std::filesystem::path& file, std::uint32_t expected_magic,
                                 std::int64_t max_items) {
  const auto dir = idx_cache_dir();
  if (!dir || file.extension() != ".gz") return read_idx(file, expected_magic, max_items);
  const auto cached = idx_cache_file(*dir, file);
  if (!cached) return read_idx(file, expected_magic, max_items);  // read_idx names the missing file
  std::error_code ec;
  if (std::filesystem::is_regular_file(*cached, ec)) {
    if (auto hit = read_idx(*cached, expected_magic, max_items)) return hit;
    std::filesystem::remove(*cached, ec);  // unreadable (e.g. a disk error): read the source again
  }
  auto a = read_idx(file, expected_magic, max_items);
  if (!a || max_items > 0) return a;
  std::filesystem::create_directories(*dir, ec);
  if (!ec) (void)write_file_atomic(*cached, idx_bytes(expected_magic, *a), Durability::none);
  return a;
}

}  // namespace dlsweep::trainer::data
