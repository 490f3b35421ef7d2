// idx_reader.hpp — reads IDX files (the MNIST / Fashion-MNIST container), gzipped or plain,
// through zlib. Format: 4-byte big-endian magic (0, 0, type 0x08 = unsigned byte, ndim),
// ndim big-endian uint32 sizes, then the data. Only unsigned-byte files are accepted.
// Every error names the file and says what was expected.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::trainer::data {

/// Magic numbers of the two IDX files a classification set has.
inline constexpr std::uint32_t kIdxImagesMagic = 2051;  ///< 0x00000803: ubyte, 3 dims
inline constexpr std::uint32_t kIdxLabelsMagic = 2049;  ///< 0x00000801: ubyte, 1 dim

struct IdxArray {
  std::vector<std::uint32_t> dims;  ///< as in the header (dims[0] = items in the file)
  std::int64_t items_read = 0;      ///< items actually read (≤ dims[0])
  std::vector<std::uint8_t> data;   ///< items_read × (product of dims[1..])
};

/// Reads the header only.
Result<std::vector<std::uint32_t>> read_idx_header(const std::filesystem::path& file, std::uint32_t expected_magic);

/// Reads `file`, checking its magic against `expected_magic` and that the data is complete.
/// When max_items > 0 only the first max_items items (along dims[0]) are read.
Result<IdxArray> read_idx(const std::filesystem::path& file, std::uint32_t expected_magic, std::int64_t max_items = 0);

}  // namespace dlsweep::trainer::data
