// LiveTrials (engine/live_trials.hpp): a walk over the live trials is never invalidated by
// what it does — the trial it stands on, or another, ending (retire) or starting (add) —
// and a retired trial stays valid until release_retired(), never during a walk.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/live_trials.hpp"

using dlsweep::orch::LiveTrial;
using dlsweep::orch::LiveTrials;

namespace {

LiveTrials five() {
  LiveTrials t;
  for (std::int64_t id = 1; id <= 5; ++id) {
    LiveTrial& live = t.add(id);
    live.row.id = id;
    live.job_id = "job-" + std::to_string(id);
  }
  return t;
}

}  // namespace

TEST_CASE("live trials: a walk that ends the trial it stands on visits every trial once", "[live]") {
  LiveTrials t = five();
  std::vector<std::string> seen;
  t.for_each([&](LiveTrial& live) {
    LiveTrial* gone = t.retire(live.row.id);
    REQUIRE(gone == &live);
    seen.push_back(live.job_id);  // still valid: retired, not freed
  });
  CHECK(seen == std::vector<std::string>{"job-1", "job-2", "job-3", "job-4", "job-5"});
  CHECK(t.empty());
  CHECK(t.retired() == 5);
  CHECK_FALSE(t.release_retired());
  CHECK(t.retired() == 0);
}

TEST_CASE("live trials: trials ended during a walk are skipped, trials added are not visited", "[live]") {
  LiveTrials t = five();
  std::vector<std::string> seen;
  t.for_each([&](LiveTrial& live) {
    seen.push_back(live.job_id);
    if (live.job_id == "job-1") {
      t.retire(3);                // a later one ends: skipped
      t.add(9).job_id = "job-9";  // one starts: not this walk's
    }
    if (live.job_id == "job-2") {
      t.retire(4);
      t.add(4).job_id = "job-4-again";  // a new trial of the same id: not the one the walk began with
    }
  });
  CHECK(seen == std::vector<std::string>{"job-1", "job-2", "job-5"});
  CHECK(t.size() == 5);  // 1, 2, 4 (again), 5, 9
  REQUIRE(t.find(4) != nullptr);
  CHECK(t.find(4)->job_id == "job-4-again");
  CHECK(t.find(3) == nullptr);
  CHECK_FALSE(t.contains(3));
}

TEST_CASE("live trials: nothing retired is freed during a walk, even by a nested one", "[live]") {
  LiveTrials t = five();
  LiveTrial* first = nullptr;
  t.for_each([&](LiveTrial& live) {
    if (first) return;
    first = t.retire(live.row.id);
    // An inner walk (a cancel that ends trials from inside a walk) releases nothing either.
    t.for_each([&](LiveTrial& other) { t.retire(other.row.id); });
    CHECK(t.release_retired());  // still held: a walk is in progress
    CHECK(first->job_id == "job-1");
  });
  CHECK(t.empty());
  CHECK(t.retired() == 5);
  CHECK_FALSE(t.release_retired());
  CHECK(t.retired() == 0);
}

TEST_CASE("live trials: add, find, at and retire", "[live]") {
  LiveTrials t;
  CHECK(t.empty());
  t.add(7).job_id = "a";
  CHECK(&t.add(7) == t.find(7));  // add returns the existing one
  CHECK(t.at(7).job_id == "a");
  CHECK_THROWS_AS(t.at(8), std::out_of_range);
  CHECK(t.retire(8) == nullptr);
  const LiveTrials& c = t;
  int n = 0;
  c.for_each([&](const LiveTrial&) { ++n; });
  CHECK(n == 1);
  REQUIRE(t.retire(7) != nullptr);
  CHECK(t.find(7) == nullptr);
  CHECK(c.find(7) == nullptr);
}
