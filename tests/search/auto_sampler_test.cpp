// algorithm: auto — Optuna's AutoSampler rule as a pure function, and the delegation.
#include <catch2/catch.hpp>

#include "search/auto_sampler.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;

namespace {

Space numeric() {
  Space s;
  s.dims = {dim_log("lr", 1e-5, 1.0), dim_int("batch", 32, 1024, 32)};
  return s;
}

}  // namespace

TEST_CASE("auto: gp for a numeric space under 250 trials, then cmaes; nsga2 with objectives or constraints",
          "[search][auto]") {
  CHECK(choose_algorithm(numeric(), 0, 1, false).algorithm == "gp");
  CHECK(choose_algorithm(numeric(), 12, 1, false).reason == "gp (numeric space, 12 trials < 250)");
  CHECK(choose_algorithm(numeric(), 249, 2, true).algorithm == "gp");
  CHECK(choose_algorithm(numeric(), 250, 1, false).reason == "cmaes (numeric space, 250 trials >= 250)");
  CHECK(choose_algorithm(numeric(), 300, 2, false).reason == "nsga2 (2 objectives, 300 trials >= 250)");
  CHECK(choose_algorithm(numeric(), 300, 1, true).algorithm == "nsga2");
  CHECK(choose_algorithm(numeric(), 20, 1, false, 10).algorithm == "cmaes");
}

TEST_CASE("auto: tpe where the space is conditional or categorical, whatever the count", "[search][auto]") {
  Space cat = numeric();
  cat.dims.push_back(dim_choice("optimizer", {"sgd", "adam"}));
  CHECK(choose_algorithm(cat, 3, 1, false).reason == "tpe (categorical parameter 'optimizer')");
  CHECK(choose_algorithm(cat, 1000, 1, false).algorithm == "tpe");
  CHECK(choose_algorithm(mixed_space(), 5, 1, false).reason == "tpe (conditional space)");
}

TEST_CASE("auto: proposes what the chosen sampler proposes, and says which", "[search][auto]") {
  auto a = std::move(*make_sampler("auto", numeric(), 4));
  auto gp = std::move(*make_sampler("gp", numeric(), 4));
  History h;
  for (int i = 0; i < 14; ++i) {
    auto p = *a->next(i, h);
    CHECK(p == *gp->next(i, h));
    h.trials.push_back(complete(i, p, -std::abs(std::log10(p["lr"].get<double>()) + 3)));
  }
  CHECK(a->chosen(14, h) == "gp (numeric space, 14 trials < 250)");
  CHECK(gp->chosen(14, h).empty());
  auto switched = std::move(*make_sampler("auto", numeric(), 4, {{"auto_gp_trials", 10}}));
  auto cmaes = std::move(*make_sampler("cmaes", numeric(), 4));
  CHECK(*switched->next(14, h) == *cmaes->next(14, h));
  auto bad = make_sampler("auto", numeric(), 4, {{"auto_gp_trials", -1}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().front().key == "auto_gp_trials");
}
