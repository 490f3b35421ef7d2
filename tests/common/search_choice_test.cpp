// auto's recorded choices (common/search_choice.hpp): the JSON round trip, a damaged event
// skipped, repeats merged (a resume records the choice in force again), and the one line
// `best --explain` prints.
#include <catch2/catch.hpp>

#include "common/search_choice.hpp"

using namespace dlsweep;

TEST_CASE("search choice: the algorithm is the first word of the sampler's words; JSON round trip") {
  const auto c = SearchChoice::from_reason(12, "gp (numeric space, 12 trials < 250)");
  CHECK(c.algorithm == "gp");
  const auto back = SearchChoice::from_json(c.to_json());
  REQUIRE(back);
  CHECK(back->from == 12);
  CHECK(back->algorithm == "gp");
  CHECK(back->reason == "gp (numeric space, 12 trials < 250)");
  // Damaged or foreign events are skipped, never a crash.
  for (const char* bad : {"null", "[]", "{}", R"({"from": "3", "algorithm": "gp"})", R"({"from": 3})",
                          R"({"from": 3, "algorithm": ""})", R"({"from": 1.5, "algorithm": "gp"})"})
    CHECK_FALSE(SearchChoice::from_json(nlohmann::json::parse(bad)));
  const auto bare = SearchChoice::from_json(nlohmann::json::parse(R"({"from": 3, "algorithm": "tpe"})"));
  REQUIRE(bare);
  CHECK(bare->reason == "tpe");
}

TEST_CASE("search choice: a resume's repeat of the choice in force is merged; a switch is kept") {
  const auto merged = merge_search_choices({SearchChoice::from_reason(250, "cmaes (numeric space, 250 trials >= 250)"),
                                            SearchChoice::from_reason(0, "gp (numeric space, 0 trials < 250)"),
                                            SearchChoice::from_reason(40, "gp (numeric space, 40 trials < 250)"),
                                            SearchChoice::from_reason(260, "cmaes (numeric space, 260 trials >= 250)")});
  REQUIRE(merged.size() == 2);
  CHECK(merged[0].from == 0);
  CHECK(merged[1].from == 250);
  CHECK(search_choices_line(merged, 299) ==
        "search auto: gp (numeric space, 0 trials < 250) for trials 0-249, then cmaes (numeric space, 250 trials >= "
        "250) for trials 250-299");
  // A study still running (its last trial unknown) and one trial alone.
  CHECK(search_choices_line(merged, std::nullopt).ends_with("for trials 0-249, then cmaes (numeric space, 250 trials >= "
                                                            "250) for trials from 250 on"));
  CHECK(search_choices_line({SearchChoice::from_reason(0, "tpe (categorical)")}, 0) ==
        "search auto: tpe (categorical) for trial 0");
  CHECK(search_choices_line({}, 10).empty());
}
