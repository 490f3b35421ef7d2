// report_test_support.hpp — a self-removing temporary directory and must()/must_ok() for report tests.
#pragma once

#include "tests/support/temp_dir.hpp"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/result.hpp"

namespace dlsweep::report::testing {

/// The tests' one temporary directory (tests/support/temp_dir.hpp).
using test_support::TempDir;

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
