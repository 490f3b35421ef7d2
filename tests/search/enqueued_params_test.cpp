// merge_enqueued: the params of an enqueued trial (fixed values over the sampler's
// proposal), with conditional dimensions switched on and off consistently, deterministically.
#include <catch2/catch.hpp>

#include "search/conditional.hpp"
#include "search/enqueued_params.hpp"
#include "search/random_sampler.hpp"
#include "search/sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

TEST_CASE("enqueued: the fixed values win, the rest is the sampler's proposal", "[search][enqueue]") {
  const Space s = mixed_space();
  for (const char* algo : {"random", "qmc", "tpe"}) {
    INFO(algo);
    auto sampler = std::move(*make_sampler(algo, s, 7));
    auto sampled = sampler->next(3, History{});
    REQUIRE(sampled);
    auto p = merge_enqueued(s, 7, 3, sampled, json{{"batch_size", 1024}, {"lr", 0.5}});
    CHECK(p["batch_size"] == 1024);
    CHECK(p["lr"] == 0.5);
    CHECK(p["momentum"] == (*sampled)["momentum"]);
    CHECK(p["warmup_epochs"] == (*sampled)["warmup_epochs"]);
    CHECK(p["optimizer"] == (*sampled)["optimizer"]);
    CHECK(p["epochs"] == 5);  // the space's fixed params stay
    CHECK(p.contains("trust") == ((*sampled)["optimizer"] == "lars"));
  }
}

TEST_CASE("enqueued: a fixed parent switches its children on (drawn) and off (dropped)", "[search][enqueue]") {
  const Space s = mixed_space();
  const RandomSampler random(s, 11);
  // Find trial numbers whose random proposal has optimizer sgd / lars.
  std::int64_t sgd = -1, lars = -1;
  for (std::int64_t n = 0; n < 100 && (sgd < 0 || lars < 0); ++n) {
    auto o = random.draw(s.dims[4], n);
    if (o == "sgd" && sgd < 0) sgd = n;
    if (o == "lars" && lars < 0) lars = n;
  }
  REQUIRE(sgd >= 0);
  REQUIRE(lars >= 0);
  RandomSampler sampler(s, 11);

  // The sampler proposed sgd (no trust); the user fixed lars: trust is drawn, within range,
  // the same way every time (resume re-creates the same trial).
  auto on = merge_enqueued(s, 11, sgd, sampler.next(sgd, History{}), json{{"optimizer", "lars"}});
  REQUIRE(on.contains("trust"));
  CHECK(on["trust"].get<double>() >= 1e-4);
  CHECK(on["trust"].get<double>() < 1e-2);
  CHECK(on["trust"] == random.draw(s.dims[5], sgd));
  CHECK(on == merge_enqueued(s, 11, sgd, sampler.next(sgd, History{}), json{{"optimizer", "lars"}}));

  // The sampler proposed lars (with trust); the user fixed sgd: trust is dropped.
  auto off = merge_enqueued(s, 11, lars, sampler.next(lars, History{}), json{{"optimizer", "sgd"}});
  CHECK_FALSE(off.contains("trust"));

  // Both given: both kept.
  auto both = merge_enqueued(s, 11, sgd, sampler.next(sgd, History{}), json{{"optimizer", "lars"}, {"trust", 0.005}});
  CHECK(both["trust"] == 0.005);
}

TEST_CASE("enqueued: no proposal from the sampler: random draws fill in", "[search][enqueue]") {
  const Space s = mixed_space();
  auto p = merge_enqueued(s, 2, 0, std::nullopt, json{{"optimizer", "adam"}});
  CHECK(p["optimizer"] == "adam");
  CHECK(p["epochs"] == 5);
  for (const char* name : {"lr", "momentum", "batch_size", "warmup_epochs"}) CHECK(p.contains(name));
  CHECK_FALSE(p.contains("trust"));
}
