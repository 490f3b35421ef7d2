// Batch ramps and their layout in steps (schedule/batch_plan.hpp), and the LR schedule laid
// out over them: stage boundaries, data positions, epochs and samples, Smith ramps with a cap.
#include <catch2/catch.hpp>

#include <cmath>

#include "trainer/schedule/batch_plan.hpp"
#include "trainer/schedule/lr_schedule.hpp"

using namespace dlsweep::trainer::schedule;

namespace {

BatchPlan build(PlanSpec spec) {
  auto p = BatchPlan::build(spec);
  REQUIRE(p);
  return *p;
}

}  // namespace

TEST_CASE("batch_ramp values parse; bad ones say how to write them", "[schedule]") {
  auto none = parse_batch_ramp("none");
  REQUIRE(none);
  CHECK(none->kind == BatchRamp::Kind::none);
  auto smith = parse_batch_ramp("smith");
  REQUIRE(smith);
  CHECK(smith->kind == BatchRamp::Kind::smith);
  auto st = parse_batch_ramp("0:256, 2.5:1024,4:4096");
  REQUIRE(st);
  REQUIRE(st->stages.size() == 3);
  CHECK(st->stages[1].epoch == 2.5);
  CHECK(st->stages[1].batch == 1024);
  for (const char* bad : {"", "fast", "1:256", "0:256,0:512", "0:256,2:1.5", "0:0", "0:256,x:512", "0:256,3"}) {
    INFO(bad);
    auto r = parse_batch_ramp(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().where == "batch_ramp");
    CHECK_FALSE(r.error().fix.empty());
  }
}

TEST_CASE("without a ramp the plan is the plain layout", "[schedule]") {
  PlanSpec s;
  s.train_size = 1000;
  s.batch_size = 300;  // 3 steps per epoch, tail of 100 dropped
  s.epochs = 1.5;      // 4.5 → 5 steps
  auto p = build(s);
  REQUIRE(p.stages().size() == 1);
  CHECK(p.total_steps() == 5);
  CHECK(p.stages()[0].steps_per_epoch == 3);
  auto pos = p.position(4);
  CHECK(pos.epoch == 1);
  CHECK(pos.offset == 300);
  CHECK(pos.batch == 300);
  CHECK(p.epoch_after(3) == 1.0);
  CHECK(p.epoch_after(5) == Approx(5.0 / 3));
  CHECK(p.samples_after(5) == 1500);
  CHECK(p.steps_until_epoch(1.0) == 3);
  // eval_every 1 → after the 3rd update and after the last.
  CHECK_FALSE(p.eval_after(1, 1));
  CHECK(p.eval_after(2, 1));
  CHECK(p.eval_after(4, 1));
}

TEST_CASE("explicit stages: steps per epoch, positions, epochs and samples change per stage", "[schedule]") {
  PlanSpec s;
  s.train_size = 1000;
  s.batch_size = 100;
  s.epochs = 4;
  s.ramp = *parse_batch_ramp("0:100,2:250,3.5:500");
  auto p = build(s);
  REQUIRE(p.stages().size() == 3);
  // Stage 0: 10 steps/epoch for 2 epochs; stage 1: 4 steps/epoch for 1.5 epochs; stage 2: 2
  // steps/epoch from the middle of epoch 3 (k = 1) to epoch 4.
  CHECK(p.stages()[0].steps == 20);
  CHECK(p.stages()[1].first_step == 20);
  CHECK(p.stages()[1].steps == 6);
  CHECK(p.stages()[2].first_step == 26);
  CHECK(p.stages()[2].pos0 == 1);
  CHECK(p.stages()[2].steps == 1);
  CHECK(p.total_steps() == 27);
  CHECK(p.position(19).batch == 100);
  CHECK(p.position(20).batch == 250);
  CHECK(p.position(20).epoch == 2);
  CHECK(p.position(20).offset == 0);
  CHECK(p.position(25).epoch == 3);
  CHECK(p.position(25).offset == 250);
  CHECK(p.position(26).batch == 500);
  CHECK(p.position(26).epoch == 3);
  CHECK(p.position(26).offset == 500);  // the second half of epoch 3
  CHECK(p.epoch_after(20) == 2.0);
  CHECK(p.epoch_after(24) == 3.0);
  CHECK(p.epoch_after(27) == 4.0);
  CHECK(p.samples_after(27) == 20 * 100 + 6 * 250 + 500);
  CHECK(p.max_batch() == 500);
  CHECK(p.eval_after(19, 1));
  CHECK(p.eval_after(23, 1));
  CHECK_FALSE(p.eval_after(24, 1));
}

TEST_CASE("plans check batches against the data and the ranks", "[schedule]") {
  PlanSpec s;
  s.train_size = 1000;
  s.batch_size = 100;
  s.ranks = 4;
  s.epochs = 2;
  s.ramp = *parse_batch_ramp("0:100,1:2000");
  auto big = BatchPlan::build(s);
  REQUIRE_FALSE(big);
  CHECK(big.error().where == "batch_ramp");
  // A stage the run never reaches is not checked (a shortened run of the same study).
  s.epochs = 1;
  CHECK(BatchPlan::build(s));
  s.epochs = 2;
  s.ramp = *parse_batch_ramp("0:100,1:250");
  auto uneven = BatchPlan::build(s);
  REQUIRE_FALSE(uneven);
  CHECK(uneven.error().fix.find("multiple of 4") != std::string::npos);
  s.ramp = *parse_batch_ramp("0:200,1:400");
  auto mismatch = BatchPlan::build(s);
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().what.find("batch_size") != std::string::npos);
}

TEST_CASE("smith ramp: milestones become batch increases by 1/factor, LR decay where the cap bites",
          "[schedule]") {
  PlanSpec s;
  s.train_size = 10000;
  s.batch_size = 100;
  s.epochs = 10;
  s.ramp.kind = BatchRamp::Kind::smith;
  s.milestones = {6, 2, 4, 8};  // any order
  s.decay_factor = 0.2;         // ×5 per milestone
  s.max_batch = 3000;
  auto p = build(s);
  REQUIRE(p.stages().size() == 5);
  CHECK(p.stages()[0].batch == 100);
  CHECK(p.stages()[1].batch == 500);
  CHECK(p.stages()[2].batch == 2500);
  CHECK(p.stages()[3].batch == 3000);  // capped: 12500 → 3000
  CHECK(p.stages()[4].batch == 3000);
  CHECK(p.stages()[1].lr_factor == Approx(1.0));
  CHECK(p.stages()[2].lr_factor == Approx(1.0));
  CHECK(p.stages()[3].lr_factor == Approx(0.2 * 3000.0 / 2500.0));  // the rest of the factor
  CHECK(p.stages()[4].lr_factor == Approx(0.2 * 3000.0 / 2500.0 * 0.2));
  for (const auto& st : p.stages()) CHECK(st.lr_batch == 100);  // the LR of the initial batch
  // lr/B shrinks by exactly the factor at every milestone, as under the step schedule.
  for (std::size_t i = 1; i < p.stages().size(); ++i) {
    const auto &a = p.stages()[i - 1], &b = p.stages()[i];
    CHECK((b.lr_factor / b.batch) / (a.lr_factor / a.batch) == Approx(0.2));
  }
  // The LR schedule over this plan: smith consumes the step decay.
  LrSpec ls;
  ls.base_lr = 0.1;
  ls.base_batch = 100;
  ls.decay = Decay::step;
  ls.milestones = s.milestones;
  ls.factor = 0.2;
  ls.smith = true;
  auto lr = make_lr_schedule(ls, p);
  CHECK(lr.decay.kind == Decay::constant);
  CHECK(lr.at(p.stages()[2].first_step) == Approx(0.1));
  CHECK(lr.at(p.stages()[3].first_step) == Approx(0.1 * 0.24));
  CHECK(lr.at(p.total_steps() - 1) == Approx(0.1 * 0.24 * 0.2));
}

TEST_CASE("LR schedule over an explicit ramp: the rule at each stage's batch, warmup, then decay", "[schedule]") {
  PlanSpec s;
  s.train_size = 1000;
  s.batch_size = 100;
  s.epochs = 4;
  s.ramp = *parse_batch_ramp("0:100,2:400");  // 20 steps at 100, then 2.5 steps/epoch ... 2 steps/epoch
  auto p = build(s);
  REQUIRE(p.total_steps() == 24);
  LrSpec ls;
  ls.base_lr = 0.1;
  ls.base_batch = 100;
  ls.rule = LrRule::sqrt;
  ls.warmup_epochs = 1;  // 10 steps
  ls.start = WarmupStart::zero;
  ls.decay = Decay::step;
  ls.milestones = {3};  // epoch 3 = step 22
  ls.factor = 0.5;
  auto lr = make_lr_schedule(ls, p);
  CHECK(lr.warmup_steps == 10);
  CHECK(lr.at(0) == 0.0);
  CHECK(lr.at(5) == Approx(0.05));
  CHECK(lr.at(10) == Approx(0.1));
  CHECK(lr.at(19) == Approx(0.1));
  CHECK(lr.at(20) == Approx(0.2));  // sqrt(400/100)·0.1
  CHECK(lr.at(21) == Approx(0.2));
  CHECK(lr.at(22) == Approx(0.1));  // milestone at epoch 3
  CHECK(lr.at(23) == Approx(0.1));
  // Warmup in steps instead of epochs; cosine decays over the rest of the run.
  ls.warmup_epochs = 0;
  ls.warmup_steps = 4;
  ls.decay = Decay::cosine;
  auto c = make_lr_schedule(ls, p);
  CHECK(c.warmup_steps == 4);
  CHECK(c.at(2) == Approx(0.05));
  CHECK(c.at(4) == Approx(0.1));
  CHECK(c.at(14) == Approx(0.1 * 0.5 * (1 + std::cos(M_PI * 10.0 / 20.0))).margin(1e-12));
  CHECK(c.at(20) == Approx(0.2 * 0.5 * (1 + std::cos(M_PI * 16.0 / 20.0))));
}

TEST_CASE("lr_schedule values parse; bad ones name lr_schedule and say how to write them", "[schedule]") {
  auto none = parse_lr_schedule("none");
  REQUIRE(none);
  CHECK(none->empty());
  auto st = parse_lr_schedule("0:0.1, 2.5:0.05,4:1e-3");
  REQUIRE(st);
  REQUIRE(st->size() == 3);
  CHECK((*st)[1].epoch == 2.5);
  CHECK((*st)[1].lr == 0.05);
  CHECK((*st)[2].lr == 1e-3);
  for (const char* bad : {"", "fast", "1:0.1", "0:0.1,0:0.2", "0:0.1,2:0", "0:-1", "0:0.1,x:0.2", "0:0.1,3", "0:inf",
                          "0:0.1,,2:0.2", "0:2e6"}) {
    INFO(bad);
    auto r = parse_lr_schedule(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().where == "lr_schedule");
    CHECK(r.error().fix.find("0:0.1,") != std::string::npos);
  }
}

TEST_CASE("lr_schedule replaces base_lr by epoch; rule, warmup and decay apply on top", "[schedule]") {
  PlanSpec s;
  s.train_size = 1000;
  s.batch_size = 100;
  s.epochs = 4;
  s.ramp = *parse_batch_ramp("0:100,2:400");  // steps 0-19 at 100, 20-23 at 400 (2.5 → 2 steps/epoch)
  auto p = build(s);
  LrSpec ls;
  ls.base_lr = 123;  // replaced by the schedule
  ls.base_batch = 100;
  ls.rule = LrRule::sqrt;
  ls.lr_stages = *parse_lr_schedule("0:0.1,1:0.2,3:0.05");  // epoch 1 = step 10, epoch 3 = step 22
  auto lr = make_lr_schedule(ls, p);
  REQUIRE(lr.peaks.size() == 4);
  CHECK(lr.at(0) == Approx(0.1));
  CHECK(lr.at(9) == Approx(0.1));
  CHECK(lr.at(10) == Approx(0.2));
  CHECK(lr.at(19) == Approx(0.2));
  CHECK(lr.at(20) == Approx(0.4));   // sqrt(400/100)·0.2: the rule at the stage's batch
  CHECK(lr.at(22) == Approx(0.1));   // sqrt(4)·0.05
  CHECK(lr.target_lr == Approx(0.1));
  // Goyal warmup starts at the scheduled base LR; the step decay multiplies on top.
  ls.warmup_epochs = 1.5;  // 15 steps
  ls.decay = Decay::step;
  ls.milestones = {3.5};   // step 23
  ls.factor = 0.5;
  auto w = make_lr_schedule(ls, p);
  CHECK(w.at(0) == Approx(0.1));
  CHECK(w.at(10) == Approx(0.2));                         // base 0.2 and peak 0.2
  CHECK(w.at(22) == Approx(0.1));
  CHECK(w.at(23) == Approx(0.05));
  ls.rule = LrRule::linear;
  ls.warmup_epochs = 1;  // 10 steps: base 0.1 → peak 0.1
  ls.lr_stages = *parse_lr_schedule("0:0.1,0.5:0.3");  // step 5
  auto h = make_lr_schedule(ls, p);
  CHECK(h.at(4) == Approx(0.1));
  CHECK(h.at(5) == Approx(0.3));  // start and peak are both the new base
  // Without lr stages: one peak per plan stage, base_lr throughout (the layout before).
  ls.lr_stages.clear();
  ls.base_lr = 0.1;
  auto plain = make_lr_schedule(ls, p);
  CHECK(plain.peaks.size() == 2);
  CHECK(plain.at(20) == Approx(0.4));
  // A stage at or after the end of training is never reached.
  ls.lr_stages = *parse_lr_schedule("0:0.1,4:0.5,9:1");
  CHECK(make_lr_schedule(ls, p).peaks.size() == 2);
}
