// Control-file stop requests. (Signals are tested on the real binary in cli_test.cpp, so that
// this process's signal state stays clean.)
#include <catch2/catch.hpp>

#include <thread>

#include "tests/trainer/test_util.hpp"
#include "trainer/stop_monitor.hpp"

using namespace dlsweep::trainer;
using namespace std::chrono_literals;

TEST_CASE("control.json stop is noticed; other content is not a stop", "[stop]") {
  test::TempDir tmp;
  auto file = tmp / "control.json";
  StopMonitor m(file, 0ms);
  CHECK_FALSE(m.poll());  // no file
  test::write_file(file, "{\"action\":\"continue\"}");
  CHECK_FALSE(m.poll());
  test::write_file(file, "{\"action\":\"st");  // torn write: not a request, re-read later
  CHECK_FALSE(m.poll());
  test::write_file(file, "{\"action\":\"stop\",\"reason\":\"pruned\"}");
  auto req = m.poll();
  REQUIRE(req);
  CHECK(req->source == StopRequest::Source::control_file);
  CHECK(req->reason.find("pruned") != std::string::npos);
}

TEST_CASE("the control file is checked at most once per interval", "[stop]") {
  test::TempDir tmp;
  auto file = tmp / "control.json";
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  StopMonitor m(file, 200ms, [&] { return now; });
  CHECK_FALSE(m.poll());  // first poll checks at once: nothing there
  test::write_file(file, "{\"action\":\"stop\"}");
  CHECK_FALSE(m.poll());  // within the interval: not looked at
  now += 199ms;
  CHECK_FALSE(m.poll());
  now += 1ms;
  CHECK(m.poll());
}

TEST_CASE("a stop file present at start is honoured by the first poll", "[stop]") {
  test::TempDir tmp;
  test::write_file(tmp / "control.json", "{\"action\":\"stop\"}");
  StopMonitor m(tmp / "control.json");
  CHECK(m.poll());
  CHECK(StopMonitor::pending_signal() == 0);
}
