// engine_clock.hpp — the engine's time: now() (how long a trial has been pending, the sweep's
// elapsed time) and the timer of its tick (ingestion, cancel and enqueue requests, pending
// warnings, progress). By default real time on the io_context (AsioEngineClock); a test
// passes its own clock in EngineOptions::clock and steps it (tests/support/manual_clock.hpp),
// so what happens on a tick happens when the test says, not after real seconds.
#pragma once

#include <chrono>
#include <functional>

#include "common/asio.hpp"

namespace dlsweep::orch {

class EngineClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  virtual ~EngineClock() = default;
  virtual time_point now() const = 0;
  /// Calls `fn` once, `d` from now(), on the io_context's thread. One call waits at a time:
  /// a later call_after() or cancel() drops the one still waiting.
  virtual void call_after(duration d, std::function<void()> fn) = 0;
  virtual void cancel() = 0;
};

/// Real time: std::chrono::steady_clock and a steady_timer on the io_context.
class AsioEngineClock final : public EngineClock {
 public:
  explicit AsioEngineClock(boost::asio::io_context& io) : timer_(io) {}
  time_point now() const override { return std::chrono::steady_clock::now(); }
  void call_after(duration d, std::function<void()> fn) override {
    timer_.expires_after(d);  // cancels the wait in flight, if any
    timer_.async_wait([fn = std::move(fn)](const boost::system::error_code& ec) {
      if (!ec) fn();
    });
  }
  void cancel() override { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
};

}  // namespace dlsweep::orch
