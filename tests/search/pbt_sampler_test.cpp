// The pbt sampler (search/pbt_sampler.hpp): generation 0 is the random sampler's, generation
// g > 0 waits for g-1 and ranks it, the bottom quantile exploits a top member and explores
// (factors, clamped into the space, or values resampled from their dimension), the rest
// continue; resume-exact; options refused by key.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "search/pbt_sampler.hpp"
#include "search/random_sampler.hpp"
#include "search_fixtures.hpp"

using namespace dlsweep::search;
using namespace fixtures;
using nlohmann::json;

namespace {

json options(std::int64_t population, double quantile, json perturb, std::int64_t generations = 3) {
  return {{"population", population},
          {"generations", generations},
          {"quantile", quantile},
          {"interval", {{"by", "epoch"}, {"every", 2}}},
          {"perturb", std::move(perturb)}};
}

std::unique_ptr<Sampler> make(const Space& s, const json& o, std::uint64_t seed = 1) {
  auto made = make_sampler("pbt", s, seed, o);
  if (!made) FAIL(made.error().front().key << ": " << made.error().front().what);
  return std::move(*made);
}

Space lr_space() {
  Space s;
  s.dims = {dim_uniform("lr", 0.1, 1.0), dim_int("batch", 64, 256, 64), dim_choice("width", {128, 32, 64})};
  s.fixed = {{"epochs", 6}};
  return s;
}

/// Generation 0 of 4 members with these lr and values (maximised), complete.
History generation0(const std::vector<double>& lrs, const std::vector<std::optional<double>>& values) {
  History h;
  h.maximize = true;
  for (std::size_t i = 0; i < lrs.size(); ++i) {
    TrialRecord t;
    t.number = std::int64_t(i);
    t.params = {{"epochs", 6}, {"lr", lrs[i]}, {"batch", 128}, {"width", 64}};
    t.status = values[i] ? TrialStatus::complete : TrialStatus::failed;
    t.value = values[i];
    h.trials.push_back(t);
  }
  return h;
}

}  // namespace

TEST_CASE("pbt: the quantile count is Ray Tune's ceil(q*P), at most P/2", "[search][pbt]") {
  auto k = [](std::int64_t p, double q) {
    PbtOptions o;
    o.population = p;
    o.quantile = q;
    return o.quantile_count();
  };
  CHECK(k(8, 0.25) == 2);
  CHECK(k(2, 0.25) == 1);
  CHECK(k(4, 0.1) == 1);
  CHECK(k(5, 0.5) == 2);
  CHECK(k(10, 0.2) == 2);
}

TEST_CASE("pbt: generation 0 is the random sampler's draw; the budget is population x generations", "[search][pbt]") {
  const Space s = lr_space();
  auto pbt = make(s, options(4, 0.25, {{"lr", {0.8, 1.25}}}), 9);
  RandomSampler random(s, 9);
  for (int n = 0; n < 4; ++n) CHECK(*pbt->next(n, History{}) == *random.next(n, History{}));
  CHECK(pbt->size() == 12);
  CHECK(pbt->lineage(2, History{}) == json{{"member", 2}, {"generation", 0}, {"axis", "epoch"}, {"start", 0.0},
                                           {"end", 2.0}, {"parent", nullptr}, {"exploit", nullptr}});
  History full = generation0({0.2, 0.3, 0.4, 0.5}, {1, 2, 3, 4});
  for (int n = 4; n < 8; ++n) full.trials.push_back(complete(n, full.trials[std::size_t(n - 4)].params, 1.0));
  for (int n = 8; n < 12; ++n) full.trials.push_back(complete(n, full.trials[std::size_t(n - 8)].params, 1.0));
  CHECK_FALSE(pbt->next(12, full).has_value());
}

TEST_CASE("pbt: generation g waits for every trial of generation g-1", "[search][pbt]") {
  const Space s = lr_space();
  auto pbt = make(s, options(4, 0.25, {{"lr", {0.8, 1.25}}}));
  History h = generation0({0.2, 0.3, 0.4, 0.5}, {0.1, 0.2, 0.3, 0.4});
  CHECK(pbt->ready(4, h));
  h.trials[2].status = TrialStatus::running;
  CHECK_FALSE(pbt->ready(4, h));
  CHECK_FALSE(pbt->ready(7, h));
  CHECK_FALSE(pbt->next(4, h).has_value());
  CHECK(pbt->ready(3, h));  // generation 0 never waits
  h.trials.erase(h.trials.begin() + 2);  // a trial of generation 0 is missing altogether
  CHECK_FALSE(pbt->ready(4, h));
}

TEST_CASE("pbt: the bottom quantile exploits a top member and explores; the others continue", "[search][pbt]") {
  const Space s = lr_space();
  auto pbt = make(s, options(4, 0.25, {{"lr", {0.5}}}));  // one factor: the explore step is known
  History h = generation0({0.2, 0.3, 0.4, 0.8}, {0.9, 0.5, 0.7, 0.1});
  // Ranks: member 0 (0.9), 2 (0.7), 1 (0.5), 3 (0.1); k = 1.
  const json l3 = pbt->lineage(7, h);
  CHECK(l3["member"] == 3);
  CHECK(l3["generation"] == 1);
  CHECK(l3["start"] == 2.0);
  CHECK(l3["end"] == 4.0);
  CHECK(l3["rank"] == 3);
  CHECK(l3["parent"] == 0);
  CHECK(l3["exploit"]["from"] == 0);
  CHECK(l3["exploit"]["from_member"] == 0);
  CHECK(l3["exploit"]["factors"] == json{{"lr", 0.5}});
  const Params p3 = *pbt->next(7, h);
  CHECK(p3["lr"].get<double>() == Approx(0.1));  // 0.2 x 0.5
  CHECK(p3["batch"] == 128);
  CHECK(p3["epochs"] == 6);
  for (int m : {0, 1, 2}) {
    const json l = pbt->lineage(4 + m, h);
    CHECK(l["parent"] == m);
    CHECK(l["exploit"].is_null());
    CHECK(*pbt->next(4 + m, h) == h.trials[std::size_t(m)].params);
  }
  // Minimising turns the ranking around: member 0 now exploits member 3.
  h.maximize = false;
  CHECK(pbt->lineage(4, h)["exploit"]["from"] == 3);
  CHECK(pbt->lineage(7, h)["exploit"].is_null());
}

TEST_CASE("pbt: failed, pruned and valueless trials rank last and exploit", "[search][pbt]") {
  const Space s = lr_space();
  auto pbt = make(s, options(4, 0.25, {{"lr", {1.0}}}));
  History h = generation0({0.2, 0.3, 0.4, 0.8}, {0.9, std::nullopt, 0.7, 0.1});
  const json l1 = pbt->lineage(5, h);
  CHECK(l1["rank"] == 3);
  CHECK(l1["exploit"]["from"] == 0);
  // Member 3 ranks third now, above the quantile, but the failed member already took the
  // bottom slot; it continues.
  CHECK(pbt->lineage(7, h)["exploit"].is_null());
  h.trials[3].status = TrialStatus::pruned;  // pruned: no value either, so it exploits too
  CHECK(pbt->lineage(7, h)["exploit"]["from"] == 0);
}

TEST_CASE("pbt: ranks by the last reported value of the interval", "[search][pbt]") {
  const Space s = lr_space();
  auto pbt = make(s, options(4, 0.25, {{"lr", {1.0}}}));
  History h = generation0({0.2, 0.3, 0.4, 0.8}, {0.9, 0.5, 0.7, 0.6});
  h.trials[0].curve = curve({0.9, 0.2});  // was best, ends worst
  CHECK(pbt->lineage(4, h)["rank"] == 3);
  CHECK(pbt->lineage(4, h)["exploit"]["from"] == 2);
}

TEST_CASE("pbt: explore clamps into the space (ints onto their step, choices to a neighbour)", "[search][pbt]") {
  const Space s = lr_space();
  auto up = make(s, options(4, 0.25, {{"lr", {4.0}}, {"batch", {2.0}}, {"width", {2.0}}}));
  History h = generation0({0.9, 0.3, 0.4, 0.8}, {0.9, 0.5, 0.7, 0.1});
  h.trials[0].params["batch"] = 192;
  h.trials[0].params["width"] = 64;
  Params p = *up->next(7, h);
  CHECK(p["lr"].get<double>() < 1.0);
  CHECK(p["lr"].get<double>() > 0.99);
  CHECK(p["batch"] == 256);
  CHECK(p["width"] == 128);  // 64 -> its neighbour above (sorted by value, not file order)
  auto down = make(s, options(4, 0.25, {{"lr", {0.01}}, {"batch", {0.6}}, {"width", {0.5}}}));
  p = *down->next(7, h);
  CHECK(p["lr"].get<double>() == 0.1);
  CHECK(p["batch"] == 128);  // 192 x 0.6 = 115.2 -> the nearest step: 128
  CHECK(p["width"] == 32);
  h.trials[0].params["width"] = 32;
  CHECK(down->next(7, h)->at("width") == 32);  // stays at the end
}

TEST_CASE("pbt: donors and factors are drawn uniformly per (seed, number), whatever the history order",
          "[search][pbt]") {
  const Space s = lr_space();
  const json o = options(8, 0.25, {{"lr", {0.8, 1.25}}, {"batch", {0.5, 2.0}}});
  History h;
  h.maximize = true;
  {
    auto first = make(s, o, 3);
    for (int n = 0; n < 8; ++n) h.trials.push_back(complete(n, *first->next(n, h), 0.1 * n));
  }
  std::map<std::int64_t, int> donors;
  std::map<double, int> factors;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto pbt = make(s, o, seed);
    const json l = pbt->lineage(8, h);  // member 0 ranks last
    REQUIRE(l["exploit"].is_object());
    donors[l["exploit"]["from"].get<std::int64_t>()]++;
    factors[l["exploit"]["factors"]["lr"].get<double>()]++;
  }
  CHECK(donors.size() == 2);  // members 7 and 6, the top 2
  CHECK(donors[7] > 60);
  CHECK(donors[6] > 60);
  CHECK(factors[0.8] > 60);
  CHECK(factors[1.25] > 60);
  auto a = make(s, o, 5), b = make(s, o, 5);
  History reversed = h;
  std::reverse(reversed.trials.begin(), reversed.trials.end());
  for (int n = 8; n < 16; ++n) {
    CHECK(*a->next(n, h) == *b->next(n, reversed));
    CHECK(a->lineage(n, h) == b->lineage(n, reversed));
  }
}

TEST_CASE("pbt: two exploiters of a generation never become clones while another draw is left", "[search][pbt]") {
  // 8 members, k = 2 exploiters (members 0 and 1 rank last), 2 donors x 2 x 2 factors = 8
  // (donor, factors) draws: over many seeds the two exploiters never make the same one (an
  // unconstrained pair of draws would collide 1 time in 8), and each is still a pure function
  // of (seed, number, the previous generation).
  const Space s = lr_space();
  const json o = options(8, 0.25, {{"lr", {0.8, 1.25}}, {"batch", {0.5, 2.0}}});
  History h;
  h.maximize = true;
  {
    auto first = make(s, o, 3);
    for (int n = 0; n < 8; ++n) h.trials.push_back(complete(n, *first->next(n, h), 0.1 * n));
  }
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto pbt = make(s, o, seed);
    const json a = pbt->lineage(8, h), b = pbt->lineage(9, h);
    REQUIRE(a["exploit"].is_object());
    REQUIRE(b["exploit"].is_object());
    CHECK(a["exploit"] != b["exploit"]);
    CHECK(*pbt->next(8, h) != *pbt->next(9, h));
    auto again = make(s, o, seed);
    CHECK(again->lineage(9, h) == b);
  }
}

TEST_CASE("pbt: bad options are refused with their key", "[search][pbt]") {
  const Space s = lr_space();
  const json good = options(4, 0.25, {{"lr", {0.8, 1.25}}});
  auto refused = [&](json o, const std::string& key) {
    auto made = make_sampler("pbt", s, 0, o);
    INFO(o.dump());
    REQUIRE_FALSE(made.has_value());
    bool named = false;
    for (const auto& e : made.error()) named = named || e.key == key;
    CHECK(named);
  };
  json o = good;
  o.erase("population");
  refused(o, "population");
  o = good, o["population"] = 1;
  refused(o, "population");
  o = good, o.erase("generations");
  refused(o, "generations");
  o = good, o["quantile"] = 0.6;
  refused(o, "quantile");
  o = good, o["quantile"] = 0;
  refused(o, "quantile");
  o = good, o["interval"] = {{"by", "wall_s"}, {"every", 2}};
  refused(o, "interval.by");
  o = good, o["interval"] = {{"by", "epoch"}, {"every", 0}};
  refused(o, "interval.every");
  o = good, o["interval"] = {{"by", "epoch"}, {"every", 1}, {"evry", 2}};
  refused(o, "interval.evry");
  o = good, o["perturb"] = {{"momentum", {0.8}}};
  refused(o, "perturb.momentum");
  o = good, o["perturb"] = {{"lr", {0.8, 0}}};
  refused(o, "perturb.lr");
  o = good, o["perturb"] = {{"lr", 0.8}};
  refused(o, "perturb.lr");
  o = good, o.erase("perturb");
  refused(o, "perturb");
  Space named = s;
  named.dims.push_back(dim_choice("optimizer", {"sgd", "adam"}));
  auto made = make_sampler("pbt", named, 0, options(4, 0.25, {{"optimizer", {2.0}}}));
  REQUIRE_FALSE(made.has_value());
  CHECK(made.error().front().key == "perturb.optimizer");
  CHECK(made.error().front().what.find("not numeric") != std::string::npos);
}

namespace {

/// lr on a log scale over four decades, batch an int range on a step, width a list.
Space resample_space() {
  Space s;
  s.dims = {dim_log("lr", 1e-4, 1.0), dim_int("batch", 64, 256, 64), dim_choice("width", {128, 32, 64})};
  s.fixed = {{"epochs", 6}};
  return s;
}

json resample_options(std::int64_t population, double p, json perturb) {
  json o = options(population, 0.25, std::move(perturb));
  o["resample_probability"] = p;
  return o;
}

/// Generation 0 of 8 members drawn by `s`'s pbt (seed 3), valued by member: member 0 ranks
/// last, 7 first; with k = 2, trials 8 and 9 exploit members 7 or 6.
History ranked_generation0(const Space& s, const json& o) {
  History h;
  h.maximize = true;
  auto first = make(s, o, 3);
  for (int n = 0; n < 8; ++n) h.trials.push_back(complete(n, *first->next(n, h), 0.1 * n));
  return h;
}

}  // namespace

TEST_CASE("pbt: resample_probability 1 redraws every perturb key from its dimension's distribution", "[search][pbt]") {
  const Space s = resample_space();
  const json o = resample_options(4, 1.0, {{"lr", {0.8, 1.25}}, {"batch", {2.0}}, {"width", {2.0}}});
  History h = generation0({0.2, 0.3, 0.4, 0.8}, {0.9, 0.5, 0.7, 0.1});  // member 3 exploits member 0
  std::map<int, int> decades;  // floor(log10(lr)): -4 .. -1
  std::set<json> batches, widths;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto pbt = make(s, o, seed);
    const json l = pbt->lineage(7, h);
    REQUIRE(l["exploit"].is_object());
    CHECK(l["exploit"]["from"] == 0);
    CHECK(l["exploit"]["factors"] == json::object());  // a resampled key has no factor
    const json& r = l["exploit"]["resampled"];
    REQUIRE(r.size() == 3);
    const Params p = *pbt->next(7, h);
    for (const char* k : {"lr", "batch", "width"}) CHECK(p[k] == r[k]);
    CHECK(p["epochs"] == 6);
    const double lr = r["lr"].get<double>();
    CHECK(lr >= 1e-4);
    CHECK(lr < 1.0);
    decades[int(std::floor(std::log10(lr)))]++;
    batches.insert(r["batch"]);
    widths.insert(r["width"]);
  }
  // Log-uniform: about 50 draws per decade, not piled at the donor's 0.2 or at an end.
  CHECK(decades.size() == 4);
  for (const auto& [d, count] : decades) {
    INFO("decade 1e" << d);
    CHECK(count > 25);
  }
  CHECK(batches == std::set<json>{64, 128, 192, 256});
  CHECK(widths == std::set<json>{32, 64, 128});
}

TEST_CASE("pbt: resample_probability 0.5 resamples about half the keys; the rest keep a factor", "[search][pbt]") {
  const Space s = resample_space();
  const json o = resample_options(8, 0.5, {{"lr", {0.8, 1.25}}, {"batch", {0.5, 2.0}}});
  const History h = ranked_generation0(s, o);
  int resampled = 0, factored = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto pbt = make(s, o, seed);
    for (int n : {8, 9}) {
      const json e = pbt->lineage(n, h)["exploit"];
      REQUIRE(e.is_object());
      const json r = e.value("resampled", json::object());
      for (const char* k : {"lr", "batch"}) {
        INFO(e.dump());
        CHECK(r.contains(k) != e["factors"].contains(k));  // one or the other, never both
      }
      resampled += int(r.size());
      factored += int(e["factors"].size());
    }
  }
  CHECK(resampled + factored == 800);
  CHECK(resampled > 320);  // 400 expected, standard deviation 14
  CHECK(resampled < 480);
}

TEST_CASE("pbt: with resample_probability, decisions are the same whatever the history order or restart",
          "[search][pbt]") {
  const Space s = resample_space();
  const json o = resample_options(8, 0.5, {{"lr", {0.8, 1.25}}, {"batch", {0.5, 2.0}}, {"width", {2.0}}});
  const History h = ranked_generation0(s, o);
  History reversed = h;
  std::reverse(reversed.trials.begin(), reversed.trials.end());
  int resampled = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    auto a = make(s, o, seed);
    for (int n = 8; n < 16; ++n) {
      auto restarted = make(s, o, seed);  // a resumed study: a new sampler, one trial asked alone
      const json l = a->lineage(n, h);
      CHECK(*a->next(n, h) == *restarted->next(n, reversed));
      CHECK(l == restarted->lineage(n, reversed));
      if (l["exploit"].is_object()) resampled += int(l["exploit"].value("resampled", json::object()).size());
    }
  }
  CHECK(resampled > 0);
}

TEST_CASE("pbt: resample_probability 0 draws exactly as without it, and records no `resampled`", "[search][pbt]") {
  const Space s = resample_space();
  const json without = options(8, 0.25, {{"lr", {0.8, 1.25}}, {"batch", {0.5, 2.0}}});
  const json zero = resample_options(8, 0.0, {{"lr", {0.8, 1.25}}, {"batch", {0.5, 2.0}}});
  const History h = ranked_generation0(s, without);
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto a = make(s, without, seed), b = make(s, zero, seed);
    for (int n : {8, 9}) {
      CHECK(*a->next(n, h) == *b->next(n, h));
      CHECK(a->lineage(n, h) == b->lineage(n, h));
      CHECK_FALSE(b->lineage(n, h)["exploit"].contains("resampled"));
    }
  }
}

TEST_CASE("pbt: two exploiters never become clones, resampled values included", "[search][pbt]") {
  // width alone: 2 donors x 3 values (by the factor, or resampled) = 6 (donor, width) pairs;
  // k = 2. A factor and a resampled value that land on the same width are one draw.
  const Space s = resample_space();
  const json o = resample_options(8, 0.5, {{"width", {2.0}}});
  const History h = ranked_generation0(s, o);
  int resampled = 0;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto pbt = make(s, o, seed);
    const json a = pbt->lineage(8, h)["exploit"], b = pbt->lineage(9, h)["exploit"];
    REQUIRE(a.is_object());
    REQUIRE(b.is_object());
    CHECK(a != b);
    CHECK(*pbt->next(8, h) != *pbt->next(9, h));
    resampled += int(a.contains("resampled")) + int(b.contains("resampled"));
  }
  CHECK(resampled > 100);
}

TEST_CASE("pbt: resample_probability outside [0, 1], or not a number, is refused by its key", "[search][pbt]") {
  const Space s = lr_space();
  for (const json& bad : {json(-0.1), json(2), json("x")}) {
    json o = resample_options(4, 0, {{"lr", {0.8}}});
    o["resample_probability"] = bad;
    auto made = make_sampler("pbt", s, 0, o);
    INFO(bad.dump());
    REQUIRE_FALSE(made.has_value());
    CHECK(made.error().front().key == "resample_probability");
    CHECK_FALSE(made.error().front().fix.empty());
  }
  for (double ok : {0.0, 0.25, 1.0}) CHECK(make_sampler("pbt", s, 0, resample_options(4, ok, {{"lr", {0.8}}})).has_value());
  auto random = make_sampler("random", s, 0, json{{"resample_probability", 0.25}});  // a pbt option only
  REQUIRE_FALSE(random.has_value());
  CHECK(random.error().front().key == "resample_probability");
}
