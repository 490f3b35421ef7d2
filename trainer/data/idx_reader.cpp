#include "trainer/data/idx_reader.hpp"

#include <zlib.h>

#include <climits>
#include <system_error>

#include <fmt/format.h>

namespace dlsweep::trainer::data {

namespace {

/// A gzFile that closes itself; reads gzip or (transparently) uncompressed files.
class GzFile {
 public:
  explicit GzFile(const std::filesystem::path& p) : f_(gzopen(p.c_str(), "rb")) {
    if (f_) gzbuffer(f_, 1 << 18);
  }
  ~GzFile() {
    if (f_) gzclose(f_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  explicit operator bool() const { return f_ != nullptr; }

  /// Reads up to `n` bytes; returns the count read. A stream error (a gzip stream cut short)
  /// stops the read early and sets `error`.
  std::int64_t read(void* dst, std::int64_t n, std::string& error) {
    std::int64_t got = 0;
    auto* p = static_cast<unsigned char*>(dst);
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::int64_t>(n - got, INT_MAX / 2));
      int r = gzread(f_, p + got, chunk);
      if (r < 0) {
        int code = 0;
        const char* msg = gzerror(f_, &code);
        error = msg ? msg : "read error";
        break;
      }
      if (r == 0) break;
      got += r;
    }
    return got;
  }

 private:
  gzFile f_;
};

std::string where(const std::filesystem::path& file) { return file.string(); }

Result<std::vector<std::uint32_t>> read_header(GzFile& f, const std::filesystem::path& file,
                                               std::uint32_t expected_magic) {
  std::string err;
  unsigned char magic[4];
  std::int64_t got = f.read(magic, 4, err);
  if (got < 4) return fail("file is truncated: shorter than the 4-byte IDX magic number", where(file),
                           "re-download the file");
  const std::uint32_t m = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) |
                          (std::uint32_t{magic[2]} << 8) | magic[3];
  if (m != expected_magic)
    return fail(fmt::format("bad IDX magic number {} (0x{:08x}); expected {} for an unsigned-byte IDX file "
                            "with {} dimension(s)",
                            m, m, expected_magic, expected_magic & 0xff),
                where(file), "check that this is the right file (images vs labels) and that it is not corrupted");
  const int ndim = static_cast<int>(expected_magic & 0xff);
  std::vector<std::uint32_t> dims(static_cast<std::size_t>(ndim));
  for (auto& d : dims) {
    unsigned char b[4];
    got = f.read(b, 4, err);
    if (got < 4) return fail("file is truncated inside the IDX header", where(file), "re-download the file");
    d = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
    if (d == 0) return fail("IDX header has a zero dimension", where(file), "re-download the file");
  }
  return dims;
}

Status check_exists(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return fail("file not found", where(file),
                "install the Debian package dataset-fashion-mnist, or point data_dir (params.json) or "
                "$DLSWEEP_FMNIST_DIR at a directory holding the IDX files");
  return {};
}

}  // namespace

Result<std::vector<std::uint32_t>> read_idx_header(const std::filesystem::path& file, std::uint32_t expected_magic) {
  if (auto s = check_exists(file); !s) return std::unexpected(s.error());
  GzFile f(file);
  if (!f) return fail("cannot open file", where(file), "check its permissions");
  return read_header(f, file, expected_magic);
}

Result<IdxArray> read_idx(const std::filesystem::path& file, std::uint32_t expected_magic, std::int64_t max_items) {
  if (auto s = check_exists(file); !s) return std::unexpected(s.error());
  GzFile f(file);
  if (!f) return fail("cannot open file", where(file), "check its permissions");
  auto dims = read_header(f, file, expected_magic);
  if (!dims) return std::unexpected(dims.error());

  IdxArray a;
  a.dims = *dims;
  std::int64_t item_bytes = 1;
  for (std::size_t i = 1; i < a.dims.size(); ++i) item_bytes *= a.dims[i];
  a.items_read = a.dims[0];
  if (max_items > 0 && max_items < a.items_read) a.items_read = max_items;
  const std::int64_t want = a.items_read * item_bytes;
  a.data.resize(static_cast<std::size_t>(want));
  std::string err;
  const std::int64_t got = f.read(a.data.data(), want, err);
  if (got < want)
    return fail(fmt::format("file is truncated: the header promises {} items of {} bytes, but the data ends "
                            "after {} of the {} bytes needed{}",
                            a.dims[0], item_bytes, got, want, err.empty() ? "" : " (zlib: " + err + ")"),
                where(file), "re-download the file");
  return a;
}

}  // namespace dlsweep::trainer::data
