// Checkpoint bytes from memory (parse_checkpoint): what fuzz/checkpoint_fuzz.cpp found, and
// that the from-memory reader and the file reader agree.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "trainer/checkpoint.hpp"

using namespace dlsweep::trainer;
namespace fs = std::filesystem;

namespace {

// A checkpoint of `payload` with a correct header (magic, version 1, CRC-32, size).
std::string with_header(const std::string& payload) {
  std::string out = "DLSWCKPT";
  const std::uint32_t version = 1;
  const auto crc = static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(payload.data()), payload.size()));
  const std::uint64_t size = payload.size();
  out.append(reinterpret_cast<const char*>(&version), 4);
  out.append(reinterpret_cast<const char*>(&crc), 4);
  out.append(reinterpret_cast<const char*>(&size), 8);
  return out + payload;
}

template <class T>
std::string bytes(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

// Found by fuzz/checkpoint_fuzz.cpp: an empty arena made read_checkpoint call
// memcpy(nullptr, p, 0), which is undefined behaviour (UBSan: nonnull-attribute).
TEST_CASE("an empty arena reads back as an empty arena", "[checkpoint]") {
  const std::string meta = R"({"step":3})";
  const std::string payload = bytes<std::uint64_t>(meta.size()) + meta + bytes<std::uint32_t>(1) +
                              bytes<std::uint32_t>(5) + "empty" + bytes<std::uint64_t>(0);
  auto c = parse_checkpoint(with_header(payload), "mem.dlck");
  REQUIRE(c.has_value());
  REQUIRE(c->arena("empty") != nullptr);
  CHECK(c->arena("empty")->empty());
  CHECK(c->meta["step"] == 3);
}

TEST_CASE("parse_checkpoint agrees with read_checkpoint and names the file in errors", "[checkpoint]") {
  const fs::path dir = fs::temp_directory_path() / ("dlsweep-ckpt-bytes-" + std::to_string(::getpid()));
  const std::vector<float> values = {1.0f, -2.5f};
  const std::vector<ArenaRef> arenas = {{"values", values}, {"none", {}}};
  auto path = write_checkpoint(dir, 7, {{"step", 7}}, arenas);
  REQUIRE(path.has_value());
  std::ifstream in(*path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto from_memory = parse_checkpoint(text.str(), *path);
  auto from_file = read_checkpoint(*path);
  REQUIRE(from_memory.has_value());
  REQUIRE(from_file.has_value());
  CHECK(*from_memory->arena("values") == values);
  CHECK(from_memory->meta == from_file->meta);

  auto damaged = parse_checkpoint(text.str().substr(0, 30), "cut.dlck");
  REQUIRE_FALSE(damaged.has_value());
  CHECK(damaged.error().where == "cut.dlck");
  CHECK_FALSE(damaged.error().fix.empty());
  fs::remove_all(dir);
}
