// checkpoint.hpp — checkpoint files of dlsweep-train: atomic, checksummed, self-describing.
//
// A file DIR/ckpt-<step, 12 digits>.dlck holds a JSON metadata object (the trainer's scalar
// state) and named float arenas (parameters, optimizer state), laid out as
//     "DLSWCKPT" | u32 version | u32 CRC-32 of the payload | u64 payload bytes | payload
//     payload = u64 n | n bytes of JSON | u32 arenas | per arena: u32 n | name | u64 floats | floats
// in the host's byte order (little-endian on x86-64 and aarch64). Writing goes to a
// temporary file in DIR that is fsync'ed, renamed over the final name and the directory
// fsync'ed: a reader sees a complete file or none. Only the newest `keep` checkpoints stay.
// Reading checks magic, version, size and CRC-32 (zlib); load_newest() skips a damaged file
// with a message naming it and falls back to the next newest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace dlsweep::trainer {

/// A named float array to save.
struct ArenaRef {
  std::string name;
  std::span<const float> data;
};

/// A checkpoint read back.
struct Checkpoint {
  nlohmann::json meta;
  std::vector<std::pair<std::string, std::vector<float>>> arenas;
  /// The arena called `name`, or nullptr.
  const std::vector<float>* arena(const std::string& name) const;
};

/// The file name of the checkpoint of `step` ("ckpt-000000001234.dlck").
std::string checkpoint_name(std::int64_t step);

/// Writes a checkpoint atomically into `dir` (created if missing) and removes all but the
/// newest `keep` checkpoints (and stale temporary files). Returns the file's path.
Result<std::filesystem::path> write_checkpoint(const std::filesystem::path& dir, std::int64_t step,
                                               const nlohmann::json& meta, std::span<const ArenaRef> arenas,
                                               int keep = 2);

/// Reads and verifies one checkpoint file.
Result<Checkpoint> read_checkpoint(const std::filesystem::path& file);
/// Verifies and decodes a checkpoint's bytes already in memory; `file` names it in errors.
/// Any byte string gives a Checkpoint or an Error (fuzzed by fuzz/checkpoint_fuzz.cpp).
Result<Checkpoint> parse_checkpoint(std::string_view bytes, const std::filesystem::path& file);

/// The newest valid checkpoint in `dir` (by the step in the name), or nullopt if there is
/// none. Each damaged file passed over is described in `skipped` ("FILE: reason").
std::optional<std::pair<std::filesystem::path, Checkpoint>> load_newest(const std::filesystem::path& dir,
                                                                        std::vector<std::string>& skipped);

}  // namespace dlsweep::trainer
