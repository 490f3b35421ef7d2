// stop_epoch and resuming across a changed future (population-based training's intervals):
// a run stopped at epoch E (evaluation, checkpoint, final record) and resumed from that
// checkpoint by a run whose batch_ramp/lr_schedule agree before E and add a stage at E ends
// bit-identical to the run that had that schedule from the start; a run that differs before E
// is refused with the existing note and starts from step 0.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <vector>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"
#include "tests/trainer/train_run.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/models/model.hpp"
#include "trainer/trainer.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;
namespace fs = std::filesystem;

namespace {

// A run that must succeed (its result is then a TrainResult).
struct Outcome {
  TrainResult result;
  std::vector<float> weights;
  std::vector<protocol::Record> records;
};

Outcome train(const TrainConfig& c, const fs::path& dir, const fs::path& checkpoints = {}) {
  auto run = test::train_fmnist(c, dir, checkpoints);
  REQUIRE(run.result);
  return {*run.result, std::move(run.weights), std::move(run.records)};
}
using test::of_kind;

std::map<std::string, double> without_timing(std::map<std::string, double> m) {
  for (const char* t : {"samples_per_s", "time_compute_s", "time_data_s", "time_eval_s", "time_allreduce_exposed_s"})
    m.erase(t);
  return m;
}

TrainConfig base_config() {
  TrainConfig c;
  c.train_subset = 1280;  // 20 steps per epoch at batch 64
  c.test_subset = 200;
  c.hidden = {32};
  c.epochs = 4;
  c.batch_size = 64;
  c.base_batch = 64;
  c.base_lr = 0.1;
  c.noise_scale_every = 3;
  c.checkpoint_every_s = 0;
  return c;
}

bool has_text(const std::vector<protocol::Record>& rs, const std::string& s) {
  for (const auto& r : rs)
    if (r.text.find(s) != std::string::npos) return true;
  return false;
}

/// The parent runs `parent` to its stop_epoch in its own directory; its checkpoint is copied
/// into a fresh trial directory where `child` resumes from it (what PBT's exploit step does).
Outcome parent_then_child(const TrainConfig& parent, const TrainConfig& child, Outcome* parent_out = nullptr) {
  test::TempDir pdir, cdir;
  auto p = train(parent, pdir.path(), pdir / "checkpoints");
  CHECK(p.result.status == TrainStatus::done);
  REQUIRE_FALSE(p.result.checkpoint.empty());
  fs::create_directories(cdir / "checkpoints");
  fs::copy_file(p.result.checkpoint, cdir / "checkpoints" / fs::path(p.result.checkpoint).filename());
  if (parent_out) *parent_out = p;
  return train(child, cdir.path(), cdir / "checkpoints");
}

void check_same(const Outcome& want, const Outcome& got) {
  CHECK(got.result.status == TrainStatus::done);
  CHECK(got.result.steps == want.result.steps);
  CHECK(got.weights == want.weights);  // bit-identical
  const auto we = of_kind(want.records, protocol::RecordKind::eval);
  const auto ge = of_kind(got.records, protocol::RecordKind::eval);
  REQUIRE_FALSE(ge.empty());
  // The resumed run's evaluations are the last ones of the uninterrupted run.
  REQUIRE(we.size() >= ge.size());
  for (std::size_t i = 0; i < ge.size(); ++i) {
    const auto& w = we[we.size() - ge.size() + i];
    INFO("eval at step " << ge[i].step);
    CHECK(ge[i].step == w.step);
    CHECK(ge[i].samples == w.samples);
    CHECK(without_timing(ge[i].metrics) == without_timing(w.metrics));
  }
}

}  // namespace

TEST_CASE("stop_epoch ends the run there with an evaluation, a checkpoint and the final record", "[trainer][pbt]") {
  auto c = base_config();
  c.eval_every = 1.5;  // evaluations at steps 30 and 60 ...
  c.stop_epoch = 2;    // ... and at the stop, step 40
  c.decay = schedule::Decay::cosine;
  test::TempDir tmp;
  auto o = train(c, tmp.path(), tmp / "checkpoints");
  CHECK(o.result.status == TrainStatus::done);
  CHECK(o.result.steps == 40);
  const auto evals = of_kind(o.records, protocol::RecordKind::eval);
  REQUIRE(evals.size() == 2);
  CHECK(evals[0].step == 30);
  CHECK(evals[1].step == 40);
  CHECK(evals[1].epoch == 2.0);
  // The LR is that of the 4-epoch cosine schedule at step 39 of 80, not the end of a 2-epoch one.
  CHECK(evals[1].metrics.at("lr") == Approx(0.1 * 0.5 * (1 + std::cos(M_PI * 39.0 / 80.0))));
  REQUIRE(o.records.size() >= 2);
  const auto& ck = o.records[o.records.size() - 2];
  CHECK(ck.kind == protocol::RecordKind::checkpoint);
  CHECK(ck.step == 40);
  CHECK(o.records.back().kind == protocol::RecordKind::final);
  CHECK(o.records.back().step == 40);
  CHECK(o.records.back().metrics == evals[1].metrics);
  CHECK(o.result.checkpoint == ck.text);
  CHECK(has_text(o.records, "stopping at step 40"));

  SECTION("started again in the same directory it ends at once, seq going on after the final record") {
    auto again = train(c, tmp.path(), tmp / "checkpoints");
    CHECK(again.result.steps == 40);
    CHECK(again.result.resumed_from == 40);
    for (std::size_t i = 1; i < again.records.size(); ++i) CHECK(again.records[i].seq == again.records[i - 1].seq + 1);
    CHECK(of_kind(again.records, protocol::RecordKind::final).size() == 2);
    CHECK(again.records.back().metrics == evals[1].metrics);
  }
  SECTION("the next interval in the same directory goes on from the checkpoint to the end") {
    auto full = base_config();
    full.decay = schedule::Decay::cosine;
    full.eval_every = 1.5;
    test::TempDir ref;
    auto want = train(full, ref.path());
    c.stop_epoch = 0;
    auto rest = train(c, tmp.path(), tmp / "checkpoints");
    CHECK(rest.result.resumed_from == 40);
    CHECK(rest.weights == want.weights);
    CHECK(rest.result.steps == 80);
  }
}

TEST_CASE("a run resumes across a new lr_schedule stage at the checkpoint's epoch, bit-identical", "[trainer][pbt]") {
  auto full = base_config();
  full.lr_schedule = "0:0.1,2:0.05";
  test::TempDir ref;
  const auto want = train(full, ref.path());

  auto parent = base_config();
  parent.stop_epoch = 2;
  auto child = full;
  SECTION("the parent had the first stage as a string") { parent.lr_schedule = "0:0.1"; }
  SECTION("the parent had base_lr alone") { parent.lr_schedule = "none"; }
  SECTION("the child's base_lr differs: lr_schedule replaces it") {
    parent.lr_schedule = "0:0.1";
    child.base_lr = 0.7;
  }
  Outcome p;
  const auto got = parent_then_child(parent, child, &p);
  CHECK(got.result.resumed_from == 40);
  CHECK(has_text(got.records, "resumed from"));
  check_same(want, got);
  // The parent's evaluation at its stop is the reference's at epoch 2.
  const auto pe = of_kind(p.records, protocol::RecordKind::eval);
  CHECK(without_timing(pe.back().metrics) == without_timing(of_kind(want.records, protocol::RecordKind::eval)[1].metrics));
}

TEST_CASE("a run resumes across a new batch_ramp stage at the checkpoint's epoch, bit-identical", "[trainer][pbt]") {
  auto full = base_config();
  full.batch_ramp = "0:64,2:128";
  full.lr_schedule = "0:0.1,2:0.15";  // both change at the boundary
  full.lr_rule = schedule::LrRule::sqrt;
  test::TempDir ref;
  const auto want = train(full, ref.path());
  REQUIRE(want.result.steps == 60);  // 40 at 64, 20 at 128

  auto parent = base_config();
  parent.lr_rule = schedule::LrRule::sqrt;
  parent.stop_epoch = 2;
  SECTION("the parent had batch_size alone") {}
  SECTION("the parent had a one-stage ramp") { parent.batch_ramp = "0:64"; }
  auto child = full;
  child.stop_epoch = 3;  // the child's stop_epoch differs from the parent's too
  const auto got = parent_then_child(parent, child);
  CHECK(got.result.resumed_from == 40);
  CHECK(got.result.steps == 50);
  // The same as the reference's step 50: compare by running the reference to epoch 3 too.
  auto ref3 = full;
  ref3.stop_epoch = 3;
  test::TempDir r3;
  check_same(train(ref3, r3.path()), got);
}

TEST_CASE("a checkpoint from a run that differed before its epoch is refused", "[trainer][pbt]") {
  auto parent = base_config();
  parent.stop_epoch = 2;
  parent.lr_schedule = "0:0.1";
  auto child = base_config();
  SECTION("another LR in an earlier stage") { child.lr_schedule = "0:0.2,2:0.05"; }
  SECTION("a stage before the checkpoint the parent did not have") { child.lr_schedule = "0:0.1,1:0.05,2:0.05"; }
  SECTION("another batch before the checkpoint") {
    child.batch_size = 128;
    child.batch_ramp = "0:128,2:64";
  }
  SECTION("another seed") {
    child.seed = 3;
    child.lr_schedule = "0:0.1,2:0.05";
  }
  SECTION("standardised inputs where the parent trained on [0, 1]") {
    child.standardize = true;
    child.lr_schedule = "0:0.1,2:0.05";
  }
  const auto got = parent_then_child(parent, child);
  CHECK(got.result.resumed_from == -1);
  CHECK(has_text(got.records, "written with different parameters"));
  CHECK(got.result.status == TrainStatus::done);
}

TEST_CASE("bf16_kernels is not part of the fingerprint: a bf16 checkpoint resumes on the other path", "[trainer][bf16]") {
  // Both paths compute the same quantities (up to accumulation order), so a run may move
  // between nodes with and without native bf16 kernels, or between auto and emulated.
  auto parent = base_config();
  parent.precision = "bf16";
  parent.stop_epoch = 2;
  auto child = base_config();
  child.precision = "bf16";
  SECTION("emulated, then auto") {
    parent.bf16_kernels = "emulated";
    child.bf16_kernels = "auto";
  }
  SECTION("auto, then emulated") {
    parent.bf16_kernels = "auto";
    child.bf16_kernels = "emulated";
  }
  const auto got = parent_then_child(parent, child);
  CHECK(got.result.resumed_from == 40);
  CHECK(has_text(got.records, "resumed from"));
  CHECK(got.result.status == TrainStatus::done);
  // ... while precision itself is: an fp32 run does not take a bf16 checkpoint.
  auto fp32_child = base_config();
  const auto refused = parent_then_child(parent, fp32_child);
  CHECK(refused.result.resumed_from == -1);
  CHECK(has_text(refused.records, "written with different parameters"));
}
