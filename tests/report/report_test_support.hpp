// report_test_support.hpp — a self-removing temporary directory and must()/must_ok() for report tests.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/result.hpp"

namespace dlsweep::report::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("dlsweep-report-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

template <class T>
T must(Result<T> r) {
  INFO((r ? std::string() : r.error().message()));
  REQUIRE(r.has_value());
  return std::move(*r);
}

inline void must_ok(const Status& st) {
  INFO((st ? std::string() : st.error().message()));
  REQUIRE(st.has_value());
}

}  // namespace dlsweep::report::testing
