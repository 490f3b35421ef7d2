// idx_cache.hpp — gzipped IDX files read once: the first full read of "x-idx3-ubyte.gz"
// writes the inflated file to a cache, and later reads (every trial of a sweep, every rank)
// read that instead of inflating 26 MB again (the largest part of dlsweep-train's start-up
// on Fashion-MNIST, measured with perf: zlib 39% of it).
//
// Correct when the source changes: a cache file is named by the source's canonical path,
// size, modification time (ns), inode, device and gzip trailer (CRC-32 and size of the
// content), so a changed file has another name and is inflated afresh. Files are written atomically (write_file_atomic), so concurrent ranks and
// trials see a whole file or none. The folder: $DLSWEEP_DATA_CACHE, else
// $XDG_CACHE_HOME/dlsweep/idx, else ~/.cache/dlsweep/idx; DLSWEEP_DATA_CACHE=off turns it off.
// A cache that cannot be written (read-only home) is skipped silently: it is only a speed-up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "trainer/data/idx_reader.hpp"

namespace dlsweep::trainer::data {

/// The cache folder from the environment, or nullopt when caching is off.
std::optional<std::filesystem::path> idx_cache_dir();

/// The cache file for `source` in `dir` (nullopt when the source cannot be stat'ed).
std::optional<std::filesystem::path> idx_cache_file(const std::filesystem::path& dir,
                                                    const std::filesystem::path& source);

/// read_idx through the cache: plain (not gzipped) sources and subsets that miss the cache
/// are read directly; a full read of a gzipped source fills it.
Result<IdxArray> read_idx_cached(const std::filesystem::path& file, std::uint32_t expected_magic,
                                 std::int64_t max_items = 0);

}  // namespace dlsweep::trainer::data
