// run_until.hpp — drives a Boost.Asio io_context until a condition holds: how the backend
// and engine tests wait for events. The bound only stops a hang.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "common/asio.hpp"

namespace test_support {

/// Runs the io_context until `done()` or `limit_s` elapses; returns done().
inline bool run_until(boost::asio::io_context& io, const std::function<bool()>& done, double limit_s = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (io.stopped()) io.restart();
    if (io.run_one_for(std::chrono::milliseconds(20)) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

}  // namespace test_support
