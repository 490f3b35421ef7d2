// test_util.hpp — helpers shared by the trainer tests: temporary directories and files.
#pragma once

#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

namespace dlsweep::trainer::test {

/// The tests' one temporary directory (tests/support/temp_dir.hpp).
using test_support::TempDir;

inline void write_file(const std::filesystem::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace dlsweep::trainer::test
