// Which trials `dlsweep cancel --trial N` may cancel: only existing, unfinished ones.
#include <catch2/catch.hpp>

#include "orchestrator/cancel_targets.hpp"

using dlsweep::TrialState;
using dlsweep::orch::plan_cancel;

static std::vector<dlsweep::db::TrialRow> trials() {
  std::vector<dlsweep::db::TrialRow> t(3);
  t[0].number = 0; t[0].state = TrialState::complete;
  t[1].number = 1; t[1].state = TrialState::running;
  t[2].number = 2; t[2].state = TrialState::waiting;
  return t;
}

TEST_CASE("cancel: a trial that is not sampled yet, or never will be, is an error naming it") {
  auto p = plan_cancel(trials(), {1, 5, 99}, "s");
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().what.find("no trial 5, 99 in study s") != std::string::npos);
  CHECK(p.error().what.find("0 to 2") != std::string::npos);
  CHECK(p.error().where == "--trial");
  CHECK_FALSE(p.error().fix.empty());
}

TEST_CASE("cancel: named unfinished trials are cancelled, finished ones noted") {
  auto p = plan_cancel(trials(), {0, 1, 2, 1}, "s");
  REQUIRE(p.has_value());
  CHECK(p->numbers == std::vector<std::int64_t>{1, 2});
  REQUIRE(p->notes.size() == 1);
  CHECK(p->notes[0] == "trial 0 is already COMPLETE: left as it is");
}

TEST_CASE("cancel: no number means every unfinished trial") {
  auto p = plan_cancel(trials(), {}, "s");
  REQUIRE(p.has_value());
  CHECK(p->numbers == std::vector<std::int64_t>{1, 2});
}
