// manual_clock.hpp — an engine clock (engine/engine_clock.hpp) that moves only when the test
// steps it: the engine's tick (ingestion, cancel and enqueue requests, pending warnings,
// progress) runs when the test calls advance(), and the pending and elapsed times it measures
// are the ones the test stepped. Pass it in EngineOptions::clock. Call it from the
// io_context's thread (a handler the test posts, or a fake backend's script).
//
// It holds no work on the io_context: while the engine waits only on its tick (no live job
// holding the loop), the loop runs dry and run() returns. A test steps it while jobs run.
#pragma once

#include <chrono>
#include <functional>
#include <utility>

#include "common/asio.hpp"
#include "engine/engine_clock.hpp"

namespace test_support {

class ManualClock final : public dlsweep::orch::EngineClock {
 public:
  explicit ManualClock(boost::asio::io_context& io) : io_(io) {}
  time_point now() const override { return now_; }
  void call_after(duration d, std::function<void()> fn) override {
    due_ = now_ + d;
    fn_ = std::move(fn);
  }
  void cancel() override { fn_ = nullptr; }

  /// Moves time on by `d`; the call waiting (the engine's next tick), if it is due by then,
  /// is posted to the io_context as a timer's handler would be. At most one call per step:
  /// a test steps one tick period at a time to run several ticks.
  void advance(duration d) {
    now_ += d;
    if (fn_ && due_ <= now_) {
      auto fn = std::exchange(fn_, nullptr);
      ++fired_;
      boost::asio::post(io_, std::move(fn));
    }
  }
  template <class Rep, class Period>
  void advance(std::chrono::duration<Rep, Period> d) {
    advance(std::chrono::duration_cast<duration>(d));
  }
  /// Whether a call waits (the engine armed its next tick).
  bool armed() const { return static_cast<bool>(fn_); }
  /// How many calls advance() has posted.
  int fired() const { return fired_; }

 private:
  boost::asio::io_context& io_;
  time_point now_{};
  time_point due_{};
  std::function<void()> fn_;
  int fired_ = 0;
};

}  // namespace test_support
