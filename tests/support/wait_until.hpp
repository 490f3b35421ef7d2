// wait_until.hpp — the one way tests wait on another process: poll a condition until it
// holds. The bound only stops a hang (a loaded CI machine may be slow; a healthy run never
// comes near it); nothing waits for a time to pass.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

namespace test_support {

/// True as soon as `done()` holds; false once `bound` has passed without it (then the
/// caller's REQUIRE names what never happened).
inline bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds bound = std::chrono::seconds(60),
                       std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  const auto end = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return done();
    std::this_thread::sleep_for(every);
  }
  return true;
}

/// wait_until the file exists.
inline bool wait_for_file(const std::filesystem::path& p, std::chrono::milliseconds bound = std::chrono::seconds(60)) {
  return wait_until([&] { return std::filesystem::exists(p); }, bound);
}

}  // namespace test_support
