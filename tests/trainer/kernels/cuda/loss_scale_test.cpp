// Precision names (kernels/precision.hpp) and fp16's dynamic loss-scaling rule (kernels/cuda/loss_scale.hpp), on the CPU.
#include <catch2/catch.hpp>

#include "trainer/kernels/cuda/loss_scale.hpp"
#include "trainer/kernels/precision.hpp"

using namespace dlsweep::trainer::kernels::cuda;
using namespace dlsweep::trainer::kernels;

TEST_CASE("gpu precision: names round-trip, unknown ones are refused", "[gpu][precision]") {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16}) {
    auto q = parse_precision(precision_name(p));
    REQUIRE(q);
    CHECK(*q == p);
  }
  auto bad = parse_precision("fp8");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().where == "precision");
  CHECK(bad.error().fix.find("tf32") != std::string::npos);
  CHECK_FALSE(parse_precision("FP16"));
  CHECK(uses_master_weights(Precision::bf16));
  CHECK(uses_master_weights(Precision::fp16));
  CHECK_FALSE(uses_master_weights(Precision::tf32));
  CHECK(uses_loss_scaling(Precision::fp16));
  CHECK_FALSE(uses_loss_scaling(Precision::bf16));
}

TEST_CASE("loss scaling: backoff on overflow, growth after an interval of good steps", "[gpu][precision]") {
  LossScaleOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  REQUIRE(validate(o));
  LossScaler s(o);
  CHECK(s.scale() == 1024);
  CHECK(s.inverse_scale() == 1.0 / 1024);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK(s.scale() == 1024);
  CHECK(s.update(false));  // third good step: grows
  CHECK(s.scale() == 2048);
  CHECK(s.good_steps() == 0);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK_FALSE(s.update(true));  // overflow: step skipped, halved, counter reset
  CHECK(s.scale() == 1024);
  CHECK(s.good_steps() == 0);
  CHECK(s.skipped_steps() == 1);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK(s.scale() == 1024);  // the two good steps before the overflow do not count
  CHECK(s.update(false));
  CHECK(s.scale() == 2048);
}

TEST_CASE("loss scaling: bounded by min and max scale", "[gpu][precision]") {
  LossScaleOptions o;
  o.init_scale = 4;
  o.min_scale = 1;
  o.max_scale = 8;
  o.growth_interval = 1;
  LossScaler s(o);
  for (int i = 0; i < 10; ++i) CHECK_FALSE(s.update(true));
  CHECK(s.scale() == 1);
  CHECK(s.skipped_steps() == 10);
  for (int i = 0; i < 10; ++i) CHECK(s.update(false));
  CHECK(s.scale() == 8);
  s.restore(1e30, 99);
  CHECK(s.scale() == 8);
  CHECK(s.good_steps() == 0);
}

TEST_CASE("loss scaling: the defaults are GradScaler's, bad options are refused", "[gpu][precision]") {
  LossScaleOptions d;
  CHECK(d.init_scale == 65536);
  CHECK(d.growth_factor == 2);
  CHECK(d.backoff_factor == 0.5);
  CHECK(d.growth_interval == 2000);
  REQUIRE(validate(d));
  auto with = [](auto f) {
    LossScaleOptions o;
    f(o);
    return validate(o);
  };
  auto g = with([](auto& o) { o.growth_factor = 1; });
  REQUIRE_FALSE(g);
  CHECK(g.error().where == "loss_scale.growth_factor");
  CHECK_FALSE(with([](auto& o) { o.backoff_factor = 1; }));
  CHECK_FALSE(with([](auto& o) { o.backoff_factor = 0; }));
  CHECK_FALSE(with([](auto& o) { o.growth_interval = 0; }));
  CHECK_FALSE(with([](auto& o) { o.min_scale = 0; }));
  CHECK_FALSE(with([](auto& o) { o.init_scale = 1e9; }));  // above max_scale
  CHECK_FALSE(with([](auto& o) { o.init_scale = 1.0 / 0.0; }));
}
