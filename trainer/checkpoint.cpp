#include "trainer/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace dlsweep::trainer {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'D', 'L', 'S', 'W', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeader = 24;
constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".dlck";

struct Piece {
  const void* data;
  std::size_t size;
};

std::optional<std::int64_t> step_of(const fs::path& p) {
  const std::string n = p.filename().string();
  if (!n.starts_with(kPrefix) || !n.ends_with(kSuffix)) return std::nullopt;
  const std::string digits = n.substr(5, n.size() - 5 - 5);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoll(digits);
}

Status write_all(int fd, const void* data, std::size_t size, const fs::path& file) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return fail(fmt::format("write failed: {}", std::strerror(errno)), file.string(),
                  "check free disk space and quota in the trial directory");
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return {};
}

template <class T>
bool take(std::string_view buf, std::size_t& pos, T& out) {
  if (buf.size() - pos < sizeof(T)) return false;
  std::memcpy(&out, buf.data() + pos, sizeof(T));
  pos += sizeof(T);
  return true;
}

Error damaged(const fs::path& file, const std::string& why) {
  return Error{fmt::format("damaged checkpoint: {}", why), file.string(),
               "it is skipped; delete it, or let the next checkpoint replace it"};
}

}  // namespace

const std::vector<float>* Checkpoint::arena(const std::string& name) const {
  for (const auto& [n, a] : arenas)
    if (n == name) return &a;
  return nullptr;
}

std::string checkpoint_name(std::int64_t step) { return fmt::format("{}{:012d}{}", kPrefix, step, kSuffix); }

Result<fs::path> write_checkpoint(const fs::path& dir, std::int64_t step, const nlohmann::json& meta,
                                  std::span<const ArenaRef> arenas, int keep) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    return fail("cannot create the checkpoint directory", dir.string(), "check that the trial directory is writable");

  // The payload as pieces (no copy of the arenas), checksummed before writing.
  const std::string meta_text = meta.dump();
  std::vector<std::uint64_t> u64s;   // stable storage for the length fields
  std::vector<std::uint32_t> u32s;
  u64s.reserve(arenas.size() * 2 + 1);
  u32s.reserve(arenas.size() + 1);
  std::vector<Piece> pieces;
  u64s.push_back(meta_text.size());
  pieces.push_back({&u64s.back(), 8});
  pieces.push_back({meta_text.data(), meta_text.size()});
  u32s.push_back(static_cast<std::uint32_t>(arenas.size()));
  pieces.push_back({&u32s.back(), 4});
  for (const auto& a : arenas) {
    u32s.push_back(static_cast<std::uint32_t>(a.name.size()));
    pieces.push_back({&u32s.back(), 4});
    pieces.push_back({a.name.data(), a.name.size()});
    u64s.push_back(a.data.size());
    pieces.push_back({&u64s.back(), 8});
    pieces.push_back({a.data.data(), a.data.size() * sizeof(float)});
  }
  std::uint64_t payload = 0;
  uLong crc = crc32_z(0L, Z_NULL, 0);
  for (const auto& p : pieces) {
    payload += p.size;
    // Empty pieces may have a null pointer, and crc32_z(crc, Z_NULL, ...) restarts the CRC.
    if (p.size > 0) crc = crc32_z(crc, static_cast<const Bytef*>(p.data), p.size);
  }
  char header[kHeader];
  const auto crc32v = static_cast<std::uint32_t>(crc);
  std::memcpy(header, kMagic, 8);
  std::memcpy(header + 8, &kVersion, 4);
  std::memcpy(header + 12, &crc32v, 4);
  std::memcpy(header + 16, &payload, 8);

  const fs::path final_path = dir / checkpoint_name(step);
  const fs::path tmp = dir / (checkpoint_name(step) + ".tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(fmt::format("cannot create: {}", std::strerror(errno)), tmp.string(),
                "check that the trial directory is writable");
  Status s = write_all(fd, header, kHeader, tmp);
  for (const auto& p : pieces)
    if (s && p.size > 0) s = write_all(fd, p.data, p.size, tmp);
  if (s && ::fsync(fd) != 0)
    s = fail(fmt::format("fsync failed: {}", std::strerror(errno)), tmp.string(), "check the filesystem");
  ::close(fd);
  if (!s) {
    fs::remove(tmp, ec);
    return std::unexpected(s.error());
  }
  fs::rename(tmp, final_path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return fail(fmt::format("cannot rename into place: {}", ec.message()), final_path.string(), "check the filesystem");
  }
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // the rename itself is durable
    ::close(dfd);
  }

  // Keep the newest `keep` checkpoints; drop stale temporaries of crashed writers.
  std::vector<std::pair<std::int64_t, fs::path>> all;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".tmp" && e.path() != tmp) fs::remove(e.path(), ec);
    if (auto st = step_of(e.path())) all.emplace_back(*st, e.path());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = static_cast<std::size_t>(std::max(keep, 1)); i < all.size(); ++i) fs::remove(all[i].second, ec);
  return final_path;
}

Result<Checkpoint> read_checkpoint(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail("cannot open the checkpoint", file.string(), "check that it exists and is readable");
  const std::string buf((std::istreambuf_iterator<char>(in)), {});
  return parse_checkpoint(buf, file);
}

Result<Checkpoint> parse_checkpoint(std::string_view buf, const fs::path& file) {
  if (buf.size() < kHeader) return std::unexpected(damaged(file, fmt::format("truncated ({} bytes)", buf.size())));
  if (std::memcmp(buf.data(), kMagic, 8) != 0) return std::unexpected(damaged(file, "not a dlsweep checkpoint (bad magic)"));
  std::uint32_t version = 0, crc = 0;
  std::uint64_t payload = 0;
  std::memcpy(&version, buf.data() + 8, 4);
  std::memcpy(&crc, buf.data() + 12, 4);
  std::memcpy(&payload, buf.data() + 16, 8);
  if (version != kVersion)
    return fail(fmt::format("checkpoint format version {} (this dlsweep-train reads {})", version, kVersion),
                file.string(), "resume with the dlsweep-train that wrote it, or delete it");
  if (buf.size() - kHeader != payload)
    return std::unexpected(damaged(file, fmt::format("truncated or padded: {} payload bytes, header says {}",
                                                     buf.size() - kHeader, payload)));
  const auto actual = static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(buf.data() + kHeader), payload));
  if (actual != crc) return std::unexpected(damaged(file, fmt::format("CRC-32 mismatch ({:08x} != {:08x})", actual, crc)));

  Checkpoint c;
  std::size_t pos = kHeader;
  std::uint64_t meta_len = 0;
  if (!take(buf, pos, meta_len) || buf.size() - pos < meta_len) return std::unexpected(damaged(file, "bad metadata length"));
  c.meta = nlohmann::json::parse(buf.substr(pos, meta_len), nullptr, /*allow_exceptions=*/false);
  if (c.meta.is_discarded() || !c.meta.is_object()) return std::unexpected(damaged(file, "metadata is not a JSON object"));
  pos += meta_len;
  std::uint32_t n = 0;
  if (!take(buf, pos, n)) return std::unexpected(damaged(file, "no arena count"));
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t name_len = 0;
    std::uint64_t count = 0;
    if (!take(buf, pos, name_len) || buf.size() - pos < name_len) return std::unexpected(damaged(file, "bad arena name"));
    std::string name(buf.substr(pos, name_len));
    pos += name_len;
    if (!take(buf, pos, count) || (buf.size() - pos) / sizeof(float) < count)
      return std::unexpected(damaged(file, "bad arena size"));
    std::vector<float> data(count);
    // An empty arena has data() == nullptr, and memcpy(nullptr, ...) is undefined even for 0.
    if (count > 0) std::memcpy(data.data(), buf.data() + pos, count * sizeof(float));
    pos += count * sizeof(float);
    c.arenas.emplace_back(std::move(name), std::move(data));
  }
  if (pos != buf.size()) return std::unexpected(damaged(file, "trailing bytes"));
  return c;
}

std::optional<std::pair<fs::path, Checkpoint>> load_newest(const fs::path& dir, std::vector<std::string>& skipped) {
  std::error_code ec;
  std::vector<std::pair<std::int64_t, fs::path>> all;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (auto st = step_of(e.path())) all.emplace_back(*st, e.path());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [step, path] : all) {
    auto c = read_checkpoint(path);
    if (c) return std::make_pair(path, std::move(*c));
    skipped.push_back(c.error().message());
  }
  return std::nullopt;
}

}  // namespace dlsweep::trainer
