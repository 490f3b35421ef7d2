// batch_ramp adaptive in the real trainer, on the Fashion-MNIST data of the other trainer
// tests. The step-time model is given (adaptive_step_time), so every decision is a function
// of the training numbers and the tests hold whatever this machine's timings: the batch
// changes, each decision record is the goodput argmax of its own B_simple with AdaScale's LR,
// each epoch reads its permutation exactly once, a run stopped with a checkpoint and resumed
// ends bit-identical to an uninterrupted one, and 2 MPI ranks decide as one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/protocol.hpp"
#include "tests/support/wait_until.hpp"
#include "tests/trainer/process_util.hpp"
#include "tests/trainer/test_util.hpp"
#include "trainer/comm/comm_registry.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/models/model.hpp"
#include "trainer/schedule/adaptive_batch.hpp"
#include "trainer/trainer.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;
namespace fs = std::filesystem;

namespace {

struct Run {
  TrainResult result;
  std::vector<float> weights;
  std::vector<protocol::Record> records;
  std::vector<schedule::AdaptiveStage> stages;
  std::vector<schedule::DataPosition> positions;  ///< of every update the run applied
};

std::vector<protocol::Record> read_all(const fs::path& file) {
  std::vector<protocol::Record> out;
  std::istringstream in(test::read_file(file));
  for (std::string line; std::getline(in, line);) {
    auto r = protocol::parse_record(line);
    REQUIRE(r);
    out.push_back(*r);
  }
  return out;
}

Run train(const TrainConfig& c, const fs::path& dir, const fs::path& checkpoints = {}) {
  data::DataSpec ds = data_spec(c);
  ds.dir = DLSWEEP_FMNIST_DIR;
  auto data = data::load_data(ds);
  REQUIRE(data);
  auto rep = Reporter::open(dir / "metrics.jsonl");
  REQUIRE(rep);
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  ctx.reporter = &*rep;
  ctx.checkpoint_dir = checkpoints;
  auto t = Trainer::create(c, std::move(*data), ctx);
  REQUIRE(t);
  auto r = (*t)->run();
  REQUIRE(r);
  Run out;
  out.result = *r;
  const auto& p = (*t)->model().parameters();
  out.weights.assign(p.values(), p.values() + p.arena_size());
  out.records = read_all(dir / "metrics.jsonl");
  REQUIRE((*t)->adaptive_layout());
  const auto st = (*t)->adaptive_layout()->stages();
  out.stages.assign(st.begin(), st.end());
  for (std::int64_t s = 0; s < r->steps; ++s) out.positions.push_back((*t)->position(s));
  return out;
}

TrainConfig adaptive_config() {
  TrainConfig c;
  c.train_subset = 1280;
  c.test_subset = 200;
  c.hidden = {32};
  c.epochs = 4;
  c.batch_size = 64;
  c.base_batch = 64;
  c.base_lr = 0.1;
  c.noise_scale_every = 2;
  c.checkpoint_every_s = 0;
  c.batch_ramp = "adaptive";
  c.adaptive_every = 4;
  c.adaptive_max_batch = 640;
  // T = 5 ms + 20 us per sample: goodput peaks at B = sqrt(alpha phi / beta) = sqrt(250 phi),
  // inside [64, 640] for B_simple between about 16 and 1600.
  c.adaptive_step_time = {0.005, 2e-5};
  return c;
}

std::vector<protocol::Record> decisions(const std::vector<protocol::Record>& rs) {
  std::vector<protocol::Record> out;
  for (const auto& r : rs)
    if (r.kind == protocol::RecordKind::log && r.text.rfind("adaptive: ", 0) == 0) out.push_back(r);
  return out;
}

std::map<std::string, double> without_timing(std::map<std::string, double> m) {
  for (const char* t : {"samples_per_s", "time_compute_s", "time_data_s", "time_eval_s", "time_allreduce_exposed_s",
                        "measured_samples_per_s"})
    m.erase(t);
  return m;
}

}  // namespace

TEST_CASE("an adaptive run picks the goodput batch from its noise scale, with AdaScale's LR", "[trainer][adaptive]") {
  const TrainConfig c = adaptive_config();
  test::TempDir tmp;
  const Run r = train(c, tmp.path());
  CHECK(r.result.status == TrainStatus::done);
  // The first log line says how the batch and the LR are chosen.
  REQUIRE_FALSE(r.records.empty());
  CHECK(r.records.front().text.find("batch stages adaptive") != std::string::npos);
  CHECK(r.records.front().text.find("LR by AdaScale's gain") != std::string::npos);
  const auto ds = decisions(r.records);
  REQUIRE(ds.size() >= 5);
  const auto cand = schedule::candidate_batches(64, 640, 1);
  const schedule::StepTimeModel model{0.005, 2e-5};
  bool changed = false;
  for (const auto& d : ds) {
    INFO(d.text << " at step " << d.step);
    CHECK(d.step % c.adaptive_every == 0);
    if (!d.metrics.count("grad_noise_scale")) {  // no positive estimate yet: the batch is kept
      CHECK(d.text.find("kept") != std::string::npos);
      continue;
    }
    for (const char* k : {"batch_size", "lr", "efficiency", "adascale_gain", "predicted_samples_per_s", "goodput",
                          "measured_samples_per_s"})
      CHECK(d.metrics.count(k) == 1);
    const double phi = d.metrics.at("grad_noise_scale");
    const auto want = schedule::choose_batch(cand, phi, 64, model, 1);
    CHECK(d.metrics.at("batch_size") == static_cast<double>(want.batch));
    CHECK(d.metrics.at("efficiency") == Approx(schedule::statistical_efficiency(phi, want.batch, 64)));
    // No warmup or decay: the LR is base_lr times the gain.
    CHECK(d.metrics.at("lr") == Approx(0.1 * schedule::adascale_gain(phi, want.batch, 64)));
    CHECK(d.metrics.at("adascale_gain") == Approx(schedule::adascale_gain(phi, want.batch, 64)));
    CHECK(d.metrics.at("predicted_samples_per_s") == Approx(model.throughput(want.batch, 1)));
    CHECK(d.epoch == Approx(static_cast<double>(d.samples) / 1280));
    changed = changed || want.batch != 64;
  }
  CHECK(changed);  // the batch did change
  // The eval records carry the batch in force, and the run read exactly `epochs` epochs.
  for (const auto& e : test::records_of(r.records, protocol::RecordKind::eval)) CHECK(e.metrics.count("batch_size"));
  const auto& fin = r.records.back();
  CHECK(fin.kind == protocol::RecordKind::final);
  CHECK(fin.samples >= 4 * 1280);
  CHECK(fin.samples < 4 * 1280 + 640);

  // Every epoch reads its permutation from 0 to the end, each position once.
  std::int64_t epoch = 0, next = 0, samples = 0;
  for (const auto& p : r.positions) {
    REQUIRE(p.epoch == epoch);
    REQUIRE(p.offset == next);
    next += p.batch;
    samples += p.batch;
    if (next >= 1280) {
      ++epoch;
      next -= 1280;
    }
  }
  CHECK(samples == fin.samples);
  CHECK(epoch == 4);
  // The layout's stages are the decisions (one stage per decision with a noise estimate).
  std::size_t with_estimate = 0;
  for (const auto& d : ds) with_estimate += d.metrics.count("grad_noise_scale");
  CHECK(r.stages.size() == with_estimate + 1);
}

TEST_CASE("a measured step-time model: each decision is the argmax under the model it records", "[trainer][adaptive]") {
  // Whatever this machine's timings, the record names the model (alpha, beta) and B_simple
  // the decision used, and the batch must be the goodput argmax under them.
  TrainConfig c = adaptive_config();
  c.adaptive_step_time.clear();
  c.epochs = 2;
  test::TempDir tmp;
  const Run r = train(c, tmp.path());
  CHECK(r.result.status == TrainStatus::done);
  CHECK(r.records.front().text.find("step time measured in this run") != std::string::npos);
  const auto cand = schedule::candidate_batches(64, 640, 1);
  // The start-up profile: within 5% of the run's samples (2 epochs of 1280: 128, below the 4x
  // span, so the smallest candidate >= 256 tops it), said in a log record before the first step.
  const auto prof = std::find_if(r.records.begin(), r.records.end(),
                                 [](const auto& x) { return x.text.rfind("adaptive profile: ", 0) == 0; });
  REQUIRE(prof != r.records.end());
  CHECK(prof->step == 0);
  const auto sizes = schedule::profile_batches(cand, 1, 0.05 * 2 * 1280, 3);
  CHECK(sizes.back() == *std::find_if(cand.begin(), cand.end(), [](auto b) { return b >= 256; }));
  CHECK(prof->metrics.at("profile_max_batch") == static_cast<double>(sizes.back()));
  CHECK(prof->metrics.at("profile_s") > 0);
  CHECK(prof->text.find("extrapolated") != std::string::npos);
  const auto ds = decisions(r.records);
  REQUIRE_FALSE(ds.empty());  // how many depends on the batches the timings lead to; step 4 always decides
  CHECK(ds.front().step == 4);
  for (const auto& d : ds) {
    INFO(d.text << " at step " << d.step);
    const double alpha = d.metrics.at("step_time_alpha_s"), beta = d.metrics.at("step_time_beta_s");
    CHECK(alpha >= 0);
    CHECK(beta >= 0);
    CHECK(alpha + beta > 0);
    CHECK(d.metrics.at("measured_samples_per_s") > 0);
    if (!d.metrics.count("grad_noise_scale")) {  // no positive estimate yet: the batch is kept
      CHECK(d.text.find("kept") != std::string::npos);
      continue;
    }
    const double phi = d.metrics.at("grad_noise_scale");
    const auto want = schedule::choose_batch(cand, phi, 64, {alpha, beta}, 1);
    CHECK(d.metrics.at("batch_size") == static_cast<double>(want.batch));
    CHECK(d.metrics.at("lr") == Approx(0.1 * schedule::adascale_gain(phi, want.batch, 64)));
  }
  std::int64_t samples = 0;
  for (const auto& p : r.positions) {
    CHECK(p.offset == samples % 1280);
    samples += p.batch;
  }
  CHECK(samples == r.records.back().samples);
  CHECK(samples >= 2 * 1280);
}

TEST_CASE("lr_rule instead of AdaScale, with warmup and an optimizer with state", "[trainer][adaptive]") {
  TrainConfig c = adaptive_config();
  c.adaptive_lr = "rule";
  c.lr_rule = schedule::LrRule::sqrt;
  c.optimizer = "adam";
  c.base_lr = 0.002;
  c.warmup_epochs = 1;
  c.epochs = 2;
  test::TempDir tmp;
  const Run r = train(c, tmp.path());
  CHECK(r.result.status == TrainStatus::done);
  CHECK(r.records.front().text.find("LR by lr_rule sqrt") != std::string::npos);
  for (const auto& d : decisions(r.records)) {
    INFO(d.text << " at step " << d.step);
    const double b = d.metrics.at("batch_size"), progress = std::min(1.0, d.epoch);
    // Warmup from base_lr over the first epoch of samples, at the sqrt rule's peak.
    const double peak = 0.002 * std::sqrt(b / 64);
    CHECK(d.metrics.at("lr") == Approx(0.002 + (peak - 0.002) * progress));
  }
}

TEST_CASE("an adaptive run stopped with a checkpoint resumes bit-identical to an uninterrupted one",
          "[trainer][adaptive][checkpoint]") {
  TrainConfig c = adaptive_config();
  c.decay = schedule::Decay::cosine;
  c.optimizer = GENERATE(std::string("sgd"), std::string("lamb"));
  if (c.optimizer == "lamb") c.base_lr = 0.01;
  INFO("optimizer " << c.optimizer);
  test::TempDir full_dir, cut_dir;
  const Run full = train(c, full_dir.path());
  TrainConfig first = c;
  first.stop_epoch = 2;  // an evaluation epoch: the uninterrupted run evaluates there too
  const Run a = train(first, cut_dir.path(), cut_dir / "checkpoints");
  REQUIRE_FALSE(a.result.checkpoint.empty());
  const Run b = train(c, cut_dir.path(), cut_dir / "checkpoints");
  CHECK(b.result.status == TrainStatus::done);
  CHECK(b.result.resumed_from == a.result.steps);
  CHECK(b.result.steps == full.result.steps);
  CHECK(b.weights == full.weights);  // bit-identical
  CHECK(b.stages.size() == full.stages.size());
  for (std::size_t i = 0; i < std::min(b.stages.size(), full.stages.size()); ++i) {
    CHECK(b.stages[i].first_step == full.stages[i].first_step);
    CHECK(b.stages[i].batch == full.stages[i].batch);
    CHECK(b.stages[i].lr_scale == full.stages[i].lr_scale);
  }
  // The cut directory's metrics.jsonl (both runs) holds the uninterrupted run's evaluations
  // and decisions, in order, and its final record at the end (the stopped run's own final
  // record, at stop_epoch, is the one extra).
  CHECK(test::records_of(b.records, protocol::RecordKind::final).size() == 2);
  auto keyed = [](const std::vector<protocol::Record>& rs) {
    std::vector<std::pair<std::int64_t, std::map<std::string, double>>> out;
    for (const auto& r : rs)
      if (r.kind == protocol::RecordKind::eval || (r.kind == protocol::RecordKind::final && &r == &rs.back()) ||
          (r.kind == protocol::RecordKind::log && r.text.rfind("adaptive: ", 0) == 0))
        out.push_back({r.step, without_timing(r.metrics)});
    return out;
  };
  const auto want = keyed(full.records), got = keyed(b.records);
  CHECK(got.size() == want.size());
  CHECK(got == want);
}

TEST_CASE("a measured step-time model is profiled once: a resumed run takes the profile from its checkpoint",
          "[trainer][adaptive][checkpoint]") {
  TrainConfig c = adaptive_config();
  c.adaptive_step_time.clear();
  c.epochs = 2;
  TrainConfig first = c;
  first.stop_epoch = 1;
  test::TempDir dir;
  const Run a = train(first, dir.path(), dir / "checkpoints");
  REQUIRE_FALSE(a.result.checkpoint.empty());
  const Run b = train(c, dir.path(), dir / "checkpoints");
  CHECK(b.result.status == TrainStatus::done);
  CHECK(b.result.resumed_from == a.result.steps);
  // b.records: the metrics file of both runs. One profile, at step 0, by the first run; its
  // budget is 5% of what that run trains (to stop_epoch 1: 64 samples, below the 4x span).
  std::vector<protocol::Record> profiles;
  for (const auto& r : b.records)
    if (r.kind == protocol::RecordKind::log && r.text.rfind("adaptive profile: ", 0) == 0) profiles.push_back(r);
  REQUIRE(profiles.size() == 1);
  CHECK(profiles[0].step == 0);
  const auto cand = schedule::candidate_batches(64, 640, 1);
  CHECK(profiles[0].metrics.at("profile_max_batch") ==
        static_cast<double>(schedule::profile_batches(cand, 1, 0.05 * 1 * 1280, 3).back()));
}

TEST_CASE("2 MPI ranks: an adaptive run decides as one, each rank's share B/2", "[trainer][adaptive][mpi][cli]") {
  const fs::path mpirun = test::find_on_path("mpirun");
  if (mpirun.empty() || !comm::mpi_built()) {
    WARN("mpirun or the MPI build is missing: 2-rank adaptive run not tested");
    return;
  }
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
  test::TempDir two;
  test::write_file(two / "params.json",
                   R"({"dataset":"fashion-mnist","data_dir":")" + std::string(DLSWEEP_FMNIST_DIR) +
                       R"(","train_subset":1280,"test_subset":200,"epochs":3,"batch_size":64,"base_batch":64,)"
                       R"("hidden":[32],"noise_scale_every":2,"batch_ramp":"adaptive","adaptive_every":4,)"
                       R"("adaptive_max_batch":641,"adaptive_step_time":[0.005,2e-5],"checkpoint_every_s":0})");
  const int code = test::spawn({mpirun.string(), "-np", "2", DLSWEEP_TRAIN_BIN, "--trial-dir", two.path().string()},
                               two / "out.txt", two / "err.txt")
                       .wait();
  INFO(test::read_file(two / "err.txt"));
  REQUIRE(code == 0);
  const auto rs = test::read_records(two / "metrics.jsonl");
  CHECK(rs.front().text.find("on 2 rank(s)") != std::string::npos);
  const auto ds = decisions(rs);
  REQUIRE(ds.size() >= 5);
  // The decisions rebuild the run's layout: every batch a multiple of 2 (640, not 641, at the
  // top), and the samples of the final record those of exactly 3 epochs read once each.
  schedule::AdaptiveLayout layout(1280, 64, 1);
  bool changed = false;
  for (const auto& d : ds) {
    const auto b = static_cast<std::int64_t>(d.metrics.at("batch_size"));
    CHECK(b % 2 == 0);
    CHECK(b <= 640);
    changed = changed || b != 64;
    CHECK(layout.samples_after(d.step) == d.samples);
    layout.change(d.step, b, 1);
  }
  CHECK(changed);
  const auto& fin = rs.back();
  REQUIRE(fin.kind == protocol::RecordKind::final);
  CHECK(layout.samples_after(fin.step) == fin.samples);
  CHECK(fin.samples >= 3 * 1280);
  CHECK(layout.samples_after(fin.step - 1) < 3 * 1280);
}

TEST_CASE("an adaptive run killed with SIGKILL mid-interval resumes to the uninterrupted run's records",
          "[trainer][adaptive][checkpoint][cli]") {
  // About a second of training with a checkpoint every 0.1 s: the kill lands between
  // evaluations and between decisions, and the warmup and cosine decay run across it.
  auto write_params = [](const fs::path& dir) {
    test::write_file(dir / "params.json",
                     R"({"dataset":"fashion-mnist","data_dir":")" + std::string(DLSWEEP_FMNIST_DIR) +
                         R"(","train_subset":12000,"test_subset":1000,"epochs":3,"batch_size":50,"base_batch":50,)"
                         R"("hidden":[256,128],"base_lr":0.05,"decay":"cosine","warmup_epochs":0.5,"nesterov":true,)"
                         R"("noise_scale_every":3,"batch_ramp":"adaptive","adaptive_every":7,"adaptive_max_batch":800,)"
                         R"("adaptive_step_time":[0.004,1e-5],"checkpoint_every_s":0.1})");
  };
  auto start = [](const fs::path& dir) {
    return test::spawn({DLSWEEP_TRAIN_BIN, "--trial-dir", dir.string()}, dir / "out.txt", dir / "err.txt");
  };
  test::TempDir ref, cut;
  write_params(ref.path());
  write_params(cut.path());
  REQUIRE(start(ref.path()).wait() == 0);
  test::Process p = start(cut.path());
  const auto past_a_checkpoint = [&] {
    bool checkpointed = false;
    for (const auto& r : test::read_records(cut / "metrics.jsonl")) {
      checkpointed = checkpointed || r.kind == protocol::RecordKind::checkpoint;
      if (checkpointed && r.text.rfind("adaptive: ", 0) == 0) return true;
    }
    return false;
  };
  REQUIRE(test_support::wait_until(past_a_checkpoint, std::chrono::seconds(120), std::chrono::milliseconds(2)));
  REQUIRE(::kill(p.pid, SIGKILL) == 0);
  REQUIRE(p.wait() == 128 + SIGKILL);
  REQUIRE(test::records_of(test::read_records(cut / "metrics.jsonl"), protocol::RecordKind::final).empty());
  REQUIRE(start(cut.path()).wait() == 0);

  // Each step's decision / evaluation / final record, by step (the resumed run repeats those
  // after its checkpoint; they must be the same).
  auto by_step = [](const std::vector<protocol::Record>& rs) {
    std::map<std::pair<int, std::int64_t>, std::map<std::string, double>> out;
    for (const auto& r : rs) {
      int kind = r.kind == protocol::RecordKind::eval    ? 0
                 : r.kind == protocol::RecordKind::final ? 1
                 : r.text.rfind("adaptive: ", 0) == 0    ? 2
                                                         : -1;
      if (kind < 0) continue;
      auto m = without_timing(r.metrics);
      auto [it, fresh] = out.emplace(std::pair{kind, r.step}, m);
      if (!fresh) CHECK(it->second == m);  // a repeated record is the same record
    }
    return out;
  };
  const auto after = test::read_records(cut / "metrics.jsonl");
  bool resumed = false;
  for (const auto& r : after) resumed = resumed || r.text.find("resumed from") != std::string::npos;
  CHECK(resumed);
  const auto want = by_step(test::read_records(ref / "metrics.jsonl")), got = by_step(after);
  CHECK(got.size() == want.size());
  CHECK(got == want);
  bool changed = false;
  for (const auto& [key, m] : want)
    if (key.first == 2) changed = changed || m.at("batch_size") != 50;
  CHECK(changed);
}
