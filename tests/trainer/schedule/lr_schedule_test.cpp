#include <catch2/catch.hpp>

#include <cmath>

#include "trainer/schedule/lr_schedule.hpp"

using namespace dlsweep::trainer::schedule;

TEST_CASE("LR scaling rules from base_batch to batch_size", "[schedule]") {
  REQUIRE(scaled_lr(0.1, LrRule::linear, 512, 128) == Approx(0.4));
  REQUIRE(scaled_lr(0.1, LrRule::sqrt, 512, 128) == Approx(0.2));
  REQUIRE(scaled_lr(0.1, LrRule::none, 512, 128) == Approx(0.1));
  // Smaller batches scale down.
  REQUIRE(scaled_lr(0.1, LrRule::linear, 64, 128) == Approx(0.05));
  REQUIRE(scaled_lr(0.1, LrRule::sqrt, 32, 128) == Approx(0.05));
  REQUIRE(lr_scale(LrRule::linear, 128, 128) == 1.0);
}

TEST_CASE("linear warmup point by point", "[schedule]") {
  // 10 warmup steps to 0.4.
  SECTION("starting at base_lr (Goyal)") {
    REQUIRE(warmup_lr(0, 10, 0.1, 0.4) == Approx(0.1));
    REQUIRE(warmup_lr(5, 10, 0.1, 0.4) == Approx(0.25));
    REQUIRE(warmup_lr(9, 10, 0.1, 0.4) == Approx(0.37));
    REQUIRE(warmup_lr(10, 10, 0.1, 0.4) == Approx(0.4));
    REQUIRE(warmup_lr(1000, 10, 0.1, 0.4) == Approx(0.4));
  }
  SECTION("starting at zero") {
    REQUIRE(warmup_lr(0, 10, 0.0, 0.4) == 0.0);
    REQUIRE(warmup_lr(5, 10, 0.0, 0.4) == Approx(0.2));
    REQUIRE(warmup_lr(10, 10, 0.0, 0.4) == Approx(0.4));
  }
  SECTION("no warmup") {
    REQUIRE(warmup_lr(0, 0, 0.0, 0.4) == Approx(0.4));
  }
}

TEST_CASE("a schedule converts warmup epochs to steps and composes rule and warmup", "[schedule]") {
  // base 0.1 at 128, batch 512 linear → 0.4; 2.5 warmup epochs of 4 steps = 10 steps.
  auto s = make_lr_schedule(0.1, LrRule::linear, 512, 128, 2.5, WarmupStart::base, 4);
  REQUIRE(s.target_lr == Approx(0.4));
  REQUIRE(s.warmup_steps == 10);
  REQUIRE(s.at(0) == Approx(0.1));
  REQUIRE(s.at(5) == Approx(0.25));
  REQUIRE(s.at(10) == Approx(0.4));
  auto z = make_lr_schedule(0.1, LrRule::sqrt, 512, 128, 2.5, WarmupStart::zero, 4);
  REQUIRE(z.target_lr == Approx(0.2));
  REQUIRE(z.at(0) == 0.0);
  REQUIRE(z.at(5) == Approx(0.1));
  REQUIRE(z.at(12) == Approx(0.2));
  REQUIRE(epochs_to_steps(0.5, 7) == 4);  // rounded to nearest
}

TEST_CASE("rule and warmup-start names round-trip", "[schedule]") {
  for (auto r : {LrRule::linear, LrRule::sqrt, LrRule::none}) REQUIRE(parse_lr_rule(to_string(r)) == r);
  for (auto w : {WarmupStart::base, WarmupStart::zero}) REQUIRE(parse_warmup_start(to_string(w)) == w);
  REQUIRE_FALSE(parse_lr_rule("cubic"));
}

TEST_CASE("decay names round-trip", "[schedule]") {
  for (auto d : {Decay::constant, Decay::step, Decay::cosine, Decay::poly}) REQUIRE(parse_decay(to_string(d)) == d);
  REQUIRE_FALSE(parse_decay("exp"));
}

TEST_CASE("decay multipliers point by point", "[schedule]") {
  // 10 warmup steps, 110 in total: decay progress p = (t - 10)/100.
  const std::int64_t w = 10, total = 110;
  SECTION("constant") {
    DecaySpec d;
    for (std::int64_t t : {0, 10, 50, 109}) REQUIRE(decay_multiplier(d, t, w, total) == 1.0);
  }
  SECTION("step: factor per milestone reached, counted from the milestone's first update") {
    DecaySpec d{Decay::step, {40, 80}, 0.1, 0, 2};
    REQUIRE(decay_multiplier(d, 39, w, total) == 1.0);
    REQUIRE(decay_multiplier(d, 40, w, total) == Approx(0.1));
    REQUIRE(decay_multiplier(d, 79, w, total) == Approx(0.1));
    REQUIRE(decay_multiplier(d, 80, w, total) == Approx(0.01));
    REQUIRE(decay_multiplier(d, 109, w, total) == Approx(0.01));
  }
  SECTION("cosine: (1 + cos(pi p))/2 above the floor") {
    DecaySpec d{Decay::cosine, {}, 0.1, 0, 2};
    REQUIRE(decay_multiplier(d, 5, w, total) == 1.0);  // in warmup
    REQUIRE(decay_multiplier(d, 10, w, total) == Approx(1.0));
    REQUIRE(decay_multiplier(d, 35, w, total) == Approx(0.5 * (1 + std::cos(M_PI * 0.25))));
    REQUIRE(decay_multiplier(d, 60, w, total) == Approx(0.5).margin(1e-12));
    REQUIRE(decay_multiplier(d, 109, w, total) == Approx(0.5 * (1 + std::cos(M_PI * 0.99))));
    d.floor = 0.2;  // 0.2 + 0.8·shape
    REQUIRE(decay_multiplier(d, 60, w, total) == Approx(0.6));
    REQUIRE(decay_multiplier(d, 110, w, total) == Approx(0.2));
  }
  SECTION("poly: (1 - p)^power (LARS: power 2)") {
    DecaySpec d{Decay::poly, {}, 0.1, 0, 2};
    REQUIRE(decay_multiplier(d, 10, w, total) == Approx(1.0));
    REQUIRE(decay_multiplier(d, 60, w, total) == Approx(0.25));
    REQUIRE(decay_multiplier(d, 85, w, total) == Approx(0.0625));
    d.power = 1;
    d.floor = 0.1;
    REQUIRE(decay_multiplier(d, 60, w, total) == Approx(0.1 + 0.9 * 0.5));
  }
}
