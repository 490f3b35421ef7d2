// Growing a study: the trial budget of random/qmc/tpe and grid studies, --add-trials N as a
// rewrite of search.trials only, and which studies take enqueued trials.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "study/growth.hpp"

using namespace dlsweep;
using namespace dlsweep::orch;
using nlohmann::json;

namespace {

StudySpec study(const std::string& search) {
  auto spec = parse_study(R"(
name: grow
trial: {command: [prog]}
objective: {metric: loss, mode: min}
)" + search + R"(
space:
  x: [1, 2, 3]
  y: {int: [0, 3]}
)", StudyFormat::yaml, "grow.yaml");
  if (!spec) FAIL(spec.error().front().message());
  return *spec;
}

}  // namespace

TEST_CASE("growth: random, qmc and tpe budgets grow by N, and only search.trials changes") {
  for (const char* algo : {"random", "qmc", "tpe"}) {
    INFO(algo);
    auto spec = study(fmt::format("search: {{algorithm: {}, trials: 6, seed: 4}}", algo));
    const std::string stored = spec.to_json().dump();
    CHECK(trial_budget(spec) == 6);
    auto g = grow_trial_budget(spec, stored, 5, "grow");
    REQUIRE(g.has_value());
    CHECK(g->old_budget == 6);
    CHECK(g->new_budget == 11);
    auto before = json::parse(stored), after = json::parse(g->spec_json);
    CHECK(after["search"]["trials"] == 11);
    after["search"]["trials"] = 6;
    CHECK(after == before);
    auto back = parse_study(g->spec_json, StudyFormat::json, "grow.yaml");
    REQUIRE(back.has_value());
    CHECK(back->search.trials == 11);
    CHECK(back->search.seed == 4);
    CHECK(enqueue_supported(spec, "grow").has_value());
  }
}

TEST_CASE("growth: nothing to add is refused") {
  auto spec = study("search: {algorithm: random, trials: 6}");
  for (std::int64_t n : {0, -3}) {
    auto g = grow_trial_budget(spec, spec.to_json().dump(), n, "grow");
    REQUIRE_FALSE(g.has_value());
    CHECK(g.error().is(ErrorKind::bad_input));
    CHECK_THAT(g.error().message(), Catch::Contains("--add-trials") && Catch::Contains("positive"));
  }
}

TEST_CASE("growth: a grid grows only up to its size; it takes no enqueued trials") {
  auto whole = study("search: {algorithm: grid}");
  CHECK(trial_budget(whole) == 12);
  auto g = grow_trial_budget(whole, whole.to_json().dump(), 1, "grow");
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().is(ErrorKind::bad_input));
  CHECK_THAT(g.error().message(), Catch::Contains("grid of 12 point(s)") && Catch::Contains("cannot grow") &&
                                      Catch::Contains("--rerun") && Catch::Contains("algorithm: random"));

  auto cut = study("search: {algorithm: grid, trials: 5}");
  CHECK(trial_budget(cut) == 5);
  auto ok = grow_trial_budget(cut, cut.to_json().dump(), 7, "grow");
  REQUIRE(ok.has_value());
  CHECK(ok->new_budget == 12);
  auto over = grow_trial_budget(cut, cut.to_json().dump(), 8, "grow");
  REQUIRE_FALSE(over.has_value());
  CHECK_THAT(over.error().message(), Catch::Contains("only 7 more") && Catch::Contains("--add-trials 7"));

  auto refused = enqueue_supported(whole, "grow");
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().is(ErrorKind::bad_input));
  CHECK_THAT(refused.error().message(), Catch::Contains("searches a grid") && Catch::Contains("--rerun"));
}
