// The training loop in-process: learning happens, runs are deterministic, the record stream
// follows the protocol, divergence and bad batch sizes are reported.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <vector>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"
#include "tests/trainer/train_run.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/trainer.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;

namespace {

// A run, its result checked by the caller.
test::TrainRun train(const TrainConfig& c, const std::filesystem::path& dir) { return test::train_fmnist(c, dir); }
using test::of_kind;

TrainConfig small_fmnist() {
  TrainConfig c;
  c.train_subset = 2000;
  c.test_subset = 500;
  c.epochs = 2;
  c.batch_size = 50;
  c.base_batch = 50;
  c.base_lr = 0.05;
  c.hidden = {128, 64};
  return c;
}

}  // namespace

TEST_CASE("loss decreases on a Fashion-MNIST subset and records follow the protocol", "[trainer]") {
  test::TempDir tmp;
  auto run = train(small_fmnist(), tmp.path());
  REQUIRE(run.result);
  CHECK(run.result->status == TrainStatus::done);
  CHECK(run.result->steps == 80);
  auto evals = of_kind(run.records, protocol::RecordKind::eval);
  REQUIRE(evals.size() == 2);
  CHECK(evals[0].step == 40);
  CHECK(evals[0].epoch == 1.0);
  CHECK(evals[0].samples == 2000);
  CHECK(evals[1].metrics.at("train_loss") < evals[0].metrics.at("train_loss"));
  CHECK(evals[1].metrics.at("val_loss") < std::log(10.0));
  CHECK(evals[1].metrics.at("val_acc") > 0.6);
  CHECK(evals[1].metrics.at("samples_per_s") > 0);
  for (const char* m : {"train_acc", "lr", "batch_size", "time_compute_s", "time_data_s"})
    CHECK(evals[1].metrics.count(m) == 1);
  auto finals = of_kind(run.records, protocol::RecordKind::final);
  REQUIRE(finals.size() == 1);
  CHECK(finals[0].metrics == evals[1].metrics);
  CHECK(run.records.back().kind == protocol::RecordKind::final);
  for (std::size_t i = 0; i < run.records.size(); ++i) CHECK(run.records[i].seq == static_cast<std::int64_t>(i));
}

TEST_CASE("standardize: the log says so, the inputs change the run, and it learns as well", "[trainer][data]") {
  auto c = small_fmnist();
  test::TempDir a, b;
  auto plain = train(c, a.path());
  c.standardize = true;
  auto std_run = train(c, b.path());
  REQUIRE(plain.result);
  REQUIRE(std_run.result);
  const auto log_a = of_kind(plain.records, protocol::RecordKind::log), log_b = of_kind(std_run.records, protocol::RecordKind::log);
  REQUIRE(!log_a.empty());
  REQUIRE(!log_b.empty());
  CHECK(log_a[0].text.find("(standardised)") == std::string::npos);
  CHECK(log_b[0].text.find("fashion-mnist (standardised) 2000 train") != std::string::npos);
  const auto ea = of_kind(plain.records, protocol::RecordKind::eval), eb = of_kind(std_run.records, protocol::RecordKind::eval);
  REQUIRE(ea.size() == eb.size());
  CHECK(ea[0].metrics.at("train_loss") != eb[0].metrics.at("train_loss"));  // other inputs, other run
  CHECK(eb.back().metrics.at("val_acc") > 0.6);
}

TEST_CASE("the same params give identical metrics apart from timing", "[trainer]") {
  auto c = small_fmnist();
  c.epochs = 1;
  c.eval_every = 0.5;
  c.warmup_epochs = 0.5;
  c.threads = 2;
  test::TempDir a, b;
  auto ra = train(c, a.path()), rb = train(c, b.path());
  REQUIRE(ra.records.size() == rb.records.size());
  REQUIRE(of_kind(ra.records, protocol::RecordKind::eval).size() == 2);
  for (std::size_t i = 0; i < ra.records.size(); ++i) {
    auto ma = ra.records[i].metrics, mb = rb.records[i].metrics;
    for (auto* m : {&ma, &mb})
      for (const char* timing :
           {"samples_per_s", "time_compute_s", "time_data_s", "time_eval_s", "time_allreduce_exposed_s"})
        m->erase(timing);
    CHECK(ma == mb);
    CHECK(ra.records[i].step == rb.records[i].step);
    CHECK(ra.records[i].samples == rb.records[i].samples);
  }
  // A different seed gives a different run.
  c.seed = 1;
  test::TempDir d;
  auto rc = train(c, d.path());
  CHECK(of_kind(rc.records, protocol::RecordKind::eval)[0].metrics.at("train_loss") !=
        of_kind(ra.records, protocol::RecordKind::eval)[0].metrics.at("train_loss"));
}

TEST_CASE("warmup LR appears in the records", "[trainer]") {
  TrainConfig c;
  c.dataset = "synthetic";
  c.train_subset = 640;
  c.test_subset = 64;
  c.hidden = {16};
  c.batch_size = 64;   // 10 steps per epoch
  c.base_batch = 32;   // linear: target 0.2
  c.base_lr = 0.1;
  c.warmup_epochs = 2;  // 20 steps
  c.warmup_start = schedule::WarmupStart::zero;
  c.epochs = 3;
  test::TempDir tmp;
  auto run = train(c, tmp.path());
  REQUIRE(run.result);
  auto evals = of_kind(run.records, protocol::RecordKind::eval);
  REQUIRE(evals.size() == 3);
  CHECK(evals[0].metrics.at("lr") == Approx(0.2 * 9 / 20));  // LR of the 10th update (step 9)
  CHECK(evals[1].metrics.at("lr") == Approx(0.2 * 19 / 20));
  CHECK(evals[2].metrics.at("lr") == Approx(0.2));
}

TEST_CASE("a diverging run stops with status diverged and a log record", "[trainer]") {
  TrainConfig c;
  c.dataset = "synthetic";
  c.train_subset = 1024;
  c.test_subset = 64;
  c.batch_size = 64;
  c.base_lr = 1e6;
  c.epochs = 20;
  test::TempDir tmp;
  auto run = train(c, tmp.path());
  REQUIRE(run.result);
  CHECK(run.result->status == TrainStatus::diverged);
  CHECK(run.result->steps < 20 * 16);
  REQUIRE_FALSE(run.records.empty());
  CHECK(run.records.back().kind == protocol::RecordKind::log);
  CHECK(run.records.back().text.find("non-finite") != std::string::npos);
  CHECK(of_kind(run.records, protocol::RecordKind::final).empty());
}

TEST_CASE("a batch larger than the dataset is bad input naming batch_size", "[trainer]") {
  TrainConfig c;
  c.dataset = "synthetic";
  c.train_subset = 100;
  c.test_subset = 10;
  c.batch_size = 128;
  data::DataSpec ds;
  ds.dataset = "synthetic";
  ds.train_subset = 100;
  ds.test_subset = 10;
  auto data = data::load_data(ds);
  REQUIRE(data);
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  auto t = Trainer::create(c, std::move(*data), ctx);
  REQUIRE_FALSE(t);
  CHECK(t.error().where == "batch_size");
  CHECK(t.error().fix.find("100") != std::string::npos);
}

TEST_CASE("steps per epoch drop the tail; fractional epochs round to steps", "[trainer]") {
  TrainConfig c;
  c.dataset = "synthetic";
  c.train_subset = 1000;
  c.test_subset = 10;
  c.batch_size = 300;  // 3 steps per epoch, 100 samples dropped
  c.epochs = 1.5;      // 4.5 → 5 steps (round half away from zero)
  c.eval_every = 0.34; // 1 step
  data::DataSpec ds;
  ds.dataset = "synthetic";
  ds.train_subset = 1000;
  ds.test_subset = 10;
  auto data = data::load_data(ds);
  REQUIRE(data);
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  auto t = Trainer::create(c, std::move(*data), ctx);
  REQUIRE(t);
  CHECK((*t)->steps_per_epoch() == 3);
  CHECK((*t)->total_steps() == 5);
  CHECK((*t)->eval_interval() == 1);
}

TEST_CASE("an explicit batch ramp: batch, steps per epoch and scaled LR change per stage", "[trainer][schedule]") {
  TrainConfig c;
  c.dataset = "synthetic";
  c.train_subset = 1280;
  c.test_subset = 64;
  c.hidden = {16};
  c.batch_size = 64;  // 20 steps/epoch, then 128: 10, then 256: 5
  c.base_batch = 64;
  c.base_lr = 0.05;
  c.lr_rule = schedule::LrRule::sqrt;
  c.batch_ramp = "0:64,1:128,2:256";
  c.epochs = 3;
  test::TempDir tmp;
  auto run = train(c, tmp.path());
  REQUIRE(run.result);
  CHECK(run.result->steps == 35);
  auto evals = of_kind(run.records, protocol::RecordKind::eval);
  REQUIRE(evals.size() == 3);
  const double batches[] = {64, 128, 256};
  const std::int64_t steps[] = {20, 30, 35};
  for (int i = 0; i < 3; ++i) {
    INFO("epoch " << i + 1);
    CHECK(evals[i].metrics.at("batch_size") == batches[i]);
    CHECK(evals[i].step == steps[i]);
    CHECK(evals[i].epoch == Approx(i + 1.0));
    CHECK(evals[i].samples == 1280 * (i + 1));
    CHECK(evals[i].metrics.at("lr") == Approx(0.05 * std::sqrt(batches[i] / 64)));
  }
}

TEST_CASE("a Smith ramp raises the batch at the milestones and keeps the LR", "[trainer][schedule]") {
  TrainConfig c;
  c.dataset = "synthetic";
  c.train_subset = 2000;
  c.test_subset = 64;
  c.hidden = {16};
  c.batch_size = 50;
  c.base_batch = 50;
  c.base_lr = 0.1;
  c.decay = schedule::Decay::step;
  c.decay_milestones = {1, 2};
  c.decay_factor = 0.2;  // ×5
  c.batch_ramp = "smith";
  c.max_batch_size = 1000;  // the second increase is capped: 250 → 1000, LR ×0.2·1000/250
  c.epochs = 3;
  test::TempDir tmp;
  auto run = train(c, tmp.path());
  REQUIRE(run.result);
  auto evals = of_kind(run.records, protocol::RecordKind::eval);
  REQUIRE(evals.size() == 3);
  CHECK(evals[0].metrics.at("batch_size") == 50);
  CHECK(evals[1].metrics.at("batch_size") == 250);
  CHECK(evals[2].metrics.at("batch_size") == 1000);
  CHECK(evals[0].metrics.at("lr") == Approx(0.1));
  CHECK(evals[1].metrics.at("lr") == Approx(0.1));
  CHECK(evals[2].metrics.at("lr") == Approx(0.1 * 0.2 * 1000 / 250));
  // smith needs decay=step: anything else is bad input naming batch_ramp.
  c.decay = schedule::Decay::cosine;
  data::DataSpec ds;
  ds.dataset = "synthetic";
  ds.train_subset = 2000;
  ds.test_subset = 64;
  auto data = data::load_data(ds);
  REQUIRE(data);
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  auto t = Trainer::create(c, std::move(*data), ctx);
  REQUIRE_FALSE(t);
  CHECK(t.error().where == "batch_ramp");
}

TEST_CASE("cosine decay ends near the floor; the noise scale is reported", "[trainer][noise]") {
  auto c = small_fmnist();
  c.decay = schedule::Decay::cosine;
  c.lr_floor = 0.1;
  c.noise_scale_every = 2;
  test::TempDir tmp;
  auto run = train(c, tmp.path());
  REQUIRE(run.result);
  auto evals = of_kind(run.records, protocol::RecordKind::eval);
  REQUIRE(evals.size() == 2);
  // Last update t = 79 of 80: multiplier 0.1 + 0.9·(1 + cos(π·79/80))/2.
  CHECK(evals[1].metrics.at("lr") == Approx(0.05 * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 79 / 80)))));
  for (const auto& e : evals) {
    CHECK(e.metrics.at("grad_noise_scale") > 0);
    CHECK(e.metrics.at("grad_norm_sq") > 0);
    CHECK(e.metrics.at("grad_trace_sigma") > 0);
    CHECK(e.metrics.at("time_allreduce_exposed_s") >= 0);
  }
  c.noise_scale_every = 0;
  test::TempDir off;
  auto quiet = train(c, off.path());
  CHECK(of_kind(quiet.records, protocol::RecordKind::eval)[1].metrics.count("grad_noise_scale") == 0);
}

TEST_CASE("every optimizer trains the MLP", "[trainer][optim]") {
  struct Case {
    const char* name;
    double lr;
  };
  for (auto [name, lr] : {Case{"sgd", 0.05}, Case{"adam", 0.002}, Case{"adamw", 0.002}, Case{"lars", 0.5},
                          Case{"larc", 0.05}, Case{"lamb", 0.01}}) {
    INFO(name);
    auto c = small_fmnist();
    c.optimizer = name;
    c.base_lr = lr;
    c.weight_decay = 1e-4;
    test::TempDir tmp;
    auto run = train(c, tmp.path());
    REQUIRE(run.result);
    CHECK(run.result->status == TrainStatus::done);
    auto evals = of_kind(run.records, protocol::RecordKind::eval);
    REQUIRE(evals.size() == 2);
    CHECK(evals[1].metrics.at("val_acc") > 0.6);
    CHECK(evals[1].metrics.at("train_loss") < evals[0].metrics.at("train_loss"));
  }
}
