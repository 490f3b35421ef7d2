// Random sampler: reproducible per (seed, number) whatever the history or call order,
// different across seeds, within bounds, log-uniform in log space, and covering choices.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "search/random_sampler.hpp"
#include "search/sampler.hpp"

using namespace dlsweep::search;
using nlohmann::json;

namespace {

Space mixed_space() {
  Space s;
  Dimension lr;
  lr.name = "lr";
  lr.kind = Dimension::Kind::log_uniform;
  lr.low = 1e-4;
  lr.high = 1.0;
  Dimension mom;
  mom.name = "momentum";
  mom.kind = Dimension::Kind::uniform;
  mom.low = 0.8;
  mom.high = 0.99;
  Dimension bs;
  bs.name = "batch_size";
  bs.kind = Dimension::Kind::int_range;
  bs.int_low = 64;
  bs.int_high = 1024;
  bs.int_step = 64;
  Dimension warm;
  warm.name = "warmup_epochs";
  warm.kind = Dimension::Kind::int_range;
  warm.int_low = 1;
  warm.int_high = 100;
  warm.log = true;
  Dimension opt;
  opt.name = "optimizer";
  opt.kind = Dimension::Kind::choice;
  opt.choices = {"sgd", "lars", "lamb", 7, 0.5, true};
  s.dims = {lr, mom, bs, warm, opt};
  s.fixed = {{"epochs", 3}, {"model", "mlp"}};
  return s;
}

}  // namespace

TEST_CASE("SplitMix64 matches the reference output stream", "[search][random]") {
  // Reference values of splitmix64.c (Vigna) seeded with 1234567.
  SplitMix64 r(1234567);
  CHECK(r.next_u64() == 6457827717110365317ULL);
  CHECK(r.next_u64() == 3203168211198807973ULL);
  CHECK(r.next_u64() == 9817491932198370423ULL);
  CHECK(r.next_u64() == 4593380528125082431ULL);
  CHECK(r.next_u64() == 16408922859458223821ULL);
}

TEST_CASE("SplitMix64 next_below is in range and hits every residue", "[search][random]") {
  SplitMix64 r(42);
  std::map<std::uint64_t, int> counts;
  for (int i = 0; i < 7000; ++i) {
    auto v = r.next_below(7);
    REQUIRE(v < 7);
    ++counts[v];
  }
  REQUIRE(counts.size() == 7);
  for (auto& [v, c] : counts) CHECK(std::abs(c - 1000) < 150);
  for (int i = 0; i < 100; ++i) CHECK(r.next_below(1) == 0);
  for (int i = 0; i < 100; ++i) {
    double u = r.next_unit();
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
}

TEST_CASE("same seed gives identical params for numbers 0..99 regardless of history", "[search][random]") {
  auto a = std::move(*make_sampler("random", mixed_space(), 2024));
  auto b = std::move(*make_sampler("random", mixed_space(), 2024));
  REQUIRE(a->name() == "random");
  CHECK_FALSE(a->size().has_value());
  std::vector<Params> forward;
  for (std::int64_t n = 0; n < 100; ++n) forward.push_back(*a->next(n, {}));
  // b: reverse order, repeated calls, and a non-empty history in between.
  History history;
  for (std::int64_t n = 99; n >= 0; --n) {
    auto p = b->next(n, history);
    REQUIRE(p.has_value());
    CHECK(*p == forward[static_cast<std::size_t>(n)]);
    history.trials.push_back(TrialRecord{n, *p, TrialStatus::complete, 0.5, {}, {}, {}});
  }
  CHECK(*a->next(17, history) == forward[17]);
  // Distinct numbers give distinct params.
  std::set<std::string> distinct;
  for (auto& p : forward) distinct.insert(p.dump());
  CHECK(distinct.size() == 100);
}

TEST_CASE("different seeds give different params", "[search][random]") {
  RandomSampler a(mixed_space(), 1), b(mixed_space(), 2);
  int same = 0;
  for (std::int64_t n = 0; n < 50; ++n) {
    if ((*a.next(n, {}))["lr"] == (*b.next(n, {}))["lr"]) ++same;
  }
  CHECK(same == 0);
}

TEST_CASE("random values stay within bounds, keep their JSON types, merge fixed", "[search][random]") {
  RandomSampler s(mixed_space(), 7);
  for (std::int64_t n = 0; n < 2000; ++n) {
    Params p = *s.next(n, {});
    CHECK(p["epochs"] == 3);
    CHECK(p["model"] == "mlp");
    REQUIRE(p["lr"].is_number_float());
    const double lr = p["lr"].get<double>();
    CHECK(lr >= 1e-4);
    CHECK(lr < 1.0);
    const double m = p["momentum"].get<double>();
    CHECK(m >= 0.8);
    CHECK(m < 0.99);
    REQUIRE(p["batch_size"].is_number_integer());
    const auto bs = p["batch_size"].get<std::int64_t>();
    CHECK(bs >= 64);
    CHECK(bs <= 1024);
    CHECK(bs % 64 == 0);
    REQUIRE(p["warmup_epochs"].is_number_integer());
    const auto w = p["warmup_epochs"].get<std::int64_t>();
    CHECK(w >= 1);
    CHECK(w <= 100);
  }
}

TEST_CASE("int_range draws every step value, including both ends", "[search][random]") {
  Space sp;
  Dimension d;
  d.name = "bs";
  d.kind = Dimension::Kind::int_range;
  d.int_low = 64;
  d.int_high = 1000;  // last reachable value: 960
  d.int_step = 64;
  sp.dims = {d};
  RandomSampler s(sp, 3);
  std::set<std::int64_t> seen;
  for (std::int64_t n = 0; n < 3000; ++n) seen.insert((*s.next(n, {}))["bs"].get<std::int64_t>());
  CHECK(seen.size() == 15);
  CHECK(*seen.begin() == 64);
  CHECK(*seen.rbegin() == 960);
}

TEST_CASE("log_uniform is roughly uniform in log space", "[search][random]") {
  Space sp = mixed_space();  // lr in [1e-4, 1): four decades
  RandomSampler s(sp, 11);
  const int samples = 20000;
  int buckets[4] = {0, 0, 0, 0};
  for (std::int64_t n = 0; n < samples; ++n) {
    const double lr = s.draw(sp.dims[0], n).get<double>();
    const int b = static_cast<int>(std::floor(std::log10(lr) + 4.0));
    REQUIRE(b >= 0);
    REQUIRE(b < 4);
    ++buckets[b];
  }
  // Expected 5000 per decade (sd ~61); a linear-uniform draw would put ~90% in the last.
  for (int b : buckets) {
    CHECK(b > 4500);
    CHECK(b < 5500);
  }
}

TEST_CASE("log int_range favours small values like log-uniform", "[search][random]") {
  Space sp = mixed_space();
  RandomSampler s(sp, 5);
  int below10 = 0;
  const int samples = 20000;
  for (std::int64_t n = 0; n < samples; ++n) {
    if (s.draw(sp.dims[3], n).get<std::int64_t>() < 10) ++below10;
  }
  // log-uniform over [0.5, 100.5): P(x < 9.5) = ln(19)/ln(201) ~ 0.555; uniform would be 0.09.
  CHECK(below10 > samples * 0.50);
  CHECK(below10 < samples * 0.61);
}

TEST_CASE("choice covers every value with its JSON type", "[search][random]") {
  Space sp = mixed_space();
  RandomSampler s(sp, 9);
  std::map<std::string, int> counts;
  for (std::int64_t n = 0; n < 3000; ++n) counts[s.draw(sp.dims[4], n).dump()]++;
  REQUIRE(counts.size() == 6);
  CHECK(counts.count("\"sgd\"") == 1);
  CHECK(counts.count("7") == 1);
  CHECK(counts.count("0.5") == 1);
  CHECK(counts.count("true") == 1);
  for (auto& [v, c] : counts) CHECK(c > 350);  // expected 500 each
}

TEST_CASE("random sampler rejects malformed dimensions as broken invariants", "[search][random]") {
  Space sp;
  Dimension d;
  d.name = "lr";
  d.kind = Dimension::Kind::log_uniform;
  d.low = 0;
  d.high = 1;
  sp.dims = {d};
  CHECK_THROWS_AS(RandomSampler(sp, 1), std::invalid_argument);
}
