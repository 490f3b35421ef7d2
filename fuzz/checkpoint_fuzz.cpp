// checkpoint_fuzz.cpp — libFuzzer target: checkpoint bytes (trainer/checkpoint.cpp,
// parse_checkpoint) give a Checkpoint or an Error; never a crash, UB or a huge allocation.
//
// The CRC-32 check rejects nearly every mutated file before the payload is decoded, so
// each input is tried twice: as is, and with its header repaired (magic, version, payload
// size and CRC made to match), which lets the fuzzer reach the metadata and arena decoding.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "trainer/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  (void)dlsweep::trainer::parse_checkpoint(raw, "fuzz.dlck");

  constexpr std::size_t kHeader = 24;  // "DLSWCKPT" | u32 version | u32 crc | u64 payload bytes
  std::string fixed = raw.size() >= kHeader ? raw : raw + std::string(kHeader - raw.size(), '\0');
  const std::uint32_t version = 1;
  const std::uint64_t payload = fixed.size() - kHeader;
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(fixed.data() + kHeader), payload));
  std::memcpy(fixed.data(), "DLSWCKPT", 8);
  std::memcpy(fixed.data() + 8, &version, 4);
  std::memcpy(fixed.data() + 12, &crc, 4);
  std::memcpy(fixed.data() + 16, &payload, 8);
  auto c = dlsweep::trainer::parse_checkpoint(fixed, "fuzz.dlck");
  if (c) (void)c->arena("params");
  return 0;
}
