// Checkpoints: the file format (round trip, keep-2, damaged and truncated files skipped with
// a message naming them), and the binary end to end: a run killed with SIGKILL after a
// checkpoint, or stopped with SIGUSR2, resumes and ends with the same metrics as an
// uninterrupted run; a damaged newest checkpoint is passed over.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/wait_until.hpp"
#include "tests/trainer/process_util.hpp"
#include "trainer/checkpoint.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> checkpoint_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".dlck") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void flip_byte(const fs::path& file, std::streamoff at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(at);
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("checkpoint files round-trip, keep the newest two, and reject damage", "[checkpoint]") {
  test::TempDir tmp;
  const fs::path dir = tmp / "checkpoints";
  std::vector<float> a = {1.5f, -2.0f, 3.25f}, b(1000, 0.5f);
  for (std::int64_t step : {10, 20, 30}) {
    b[0] = static_cast<float>(step);
    const ArenaRef arenas[] = {{"a", a}, {"b", b}};
    auto p = write_checkpoint(dir, step, {{"step", step}, {"note", "x"}}, arenas);
    REQUIRE(p);
    CHECK(p->filename() == checkpoint_name(step));
  }
  auto files = checkpoint_files(dir);
  REQUIRE(files.size() == 2);  // 10 was removed
  CHECK(files[0].filename() == checkpoint_name(20));
  auto c = read_checkpoint(files[1]);
  REQUIRE(c);
  CHECK(c->meta.at("step") == 30);
  REQUIRE(c->arena("a"));
  CHECK(*c->arena("a") == a);
  CHECK(c->arena("b")->at(0) == 30.0f);
  CHECK(c->arena("missing") == nullptr);

  std::vector<std::string> skipped;
  auto newest = load_newest(dir, skipped);
  REQUIRE(newest);
  CHECK(newest->second.meta.at("step") == 30);
  CHECK(skipped.empty());

  SECTION("a flipped payload byte fails the CRC; the older one is used") {
    flip_byte(files[1], 100);
    auto bad = read_checkpoint(files[1]);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().what.find("CRC") != std::string::npos);
    auto older = load_newest(dir, skipped);
    REQUIRE(older);
    CHECK(older->second.meta.at("step") == 20);
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].find(checkpoint_name(30)) != std::string::npos);
    CHECK(skipped[0].find("damaged") != std::string::npos);
  }
  SECTION("a truncated file is detected") {
    fs::resize_file(files[1], fs::file_size(files[1]) - 7);
    auto bad = read_checkpoint(files[1]);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().what.find("truncated") != std::string::npos);
    fs::resize_file(files[0], 10);
    CHECK_FALSE(load_newest(dir, skipped));
    CHECK(skipped.size() == 2);
  }
  SECTION("a foreign file is not a checkpoint") {
    test::write_file(files[0], std::string(64, 'x'));
    auto bad = read_checkpoint(files[0]);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().what.find("magic") != std::string::npos);
  }
}

namespace {

// Long enough (about a second of training) to be interrupted; checkpoints every 0.1 s.
void write_params(const fs::path& dir) {
  test::write_file(dir / "params.json",
                   R"({"dataset":"fashion-mnist","data_dir":")" + std::string(DLSWEEP_FMNIST_DIR) +
                       R"(","train_subset":12000,"test_subset":1000,"epochs":3,"batch_size":50,"hidden":[256,128],)"
                       R"("base_lr":0.05,"decay":"cosine","warmup_epochs":0.5,"optimizer":"sgd","nesterov":true,)"
                       R"("noise_scale_every":7,"checkpoint_every_s":0.1})");
}

test::Process start_trainer(const fs::path& dir) {
  return test::spawn({DLSWEEP_TRAIN_BIN, "--trial-dir", dir.string()}, dir / "out.txt", dir / "err.txt");
}

std::map<std::string, double> final_metrics(const fs::path& dir) {
  auto finals = test::records_of(test::read_records(dir / "metrics.jsonl"), protocol::RecordKind::final);
  REQUIRE(finals.size() == 1);
  return finals[0].metrics;
}

void check_same_run(const std::map<std::string, double>& want, const std::map<std::string, double>& got) {
  for (const char* m : {"val_acc", "val_loss", "train_loss", "train_acc", "lr", "grad_noise_scale", "grad_norm_sq"}) {
    INFO(m);
    REQUIRE(got.count(m) == 1);
    CHECK(got.at(m) == Approx(want.at(m)).epsilon(1e-6).margin(1e-9));
  }
}

}  // namespace

TEST_CASE("a run killed with SIGKILL after a checkpoint resumes to the same final metrics", "[checkpoint][cli]") {
  test::TempDir ref, cut;
  write_params(ref.path());
  write_params(cut.path());
  REQUIRE(start_trainer(ref.path()).wait() == 0);
  const auto want = final_metrics(ref.path());

  test::Process p = start_trainer(cut.path());
  // Kill mid-way between checkpoints: once training has gone on past the first one (an eval
  // record after the first checkpoint record), not after some time.
  const auto past_a_checkpoint = [&] {
    bool checkpointed = false;
    for (const auto& r : test::read_records(cut / "metrics.jsonl")) {
      checkpointed = checkpointed || r.kind == protocol::RecordKind::checkpoint;
      if (checkpointed && r.kind == protocol::RecordKind::eval) return true;
    }
    return false;
  };
  REQUIRE(test_support::wait_until(past_a_checkpoint, std::chrono::seconds(120), std::chrono::milliseconds(2)));
  REQUIRE(::kill(p.pid, SIGKILL) == 0);
  REQUIRE(p.wait() == 128 + SIGKILL);
  auto before = test::read_records(cut / "metrics.jsonl");
  REQUIRE_FALSE(test::records_of(before, protocol::RecordKind::checkpoint).empty());
  REQUIRE(test::records_of(before, protocol::RecordKind::final).empty());  // it really was cut short

  // Damage the newest checkpoint if there are two: the older one must be used instead.
  auto files = checkpoint_files(cut / "checkpoints");
  REQUIRE_FALSE(files.empty());
  const bool damaged = files.size() == 2;
  if (damaged) flip_byte(files.back(), 200);

  REQUIRE(start_trainer(cut.path()).wait() == 0);
  const auto after = test::read_records(cut / "metrics.jsonl");
  bool resumed = false;
  for (const auto& r : after) resumed = resumed || r.text.find("resumed from") != std::string::npos;
  CHECK(resumed);
  if (damaged) {
    const auto err = test::read_file(cut / "err.txt");
    CHECK(err.find(files.back().filename().string()) != std::string::npos);
    CHECK(err.find("damaged") != std::string::npos);
  }
  // seq keeps increasing across the restart.
  for (std::size_t i = 1; i < after.size(); ++i) CHECK(after[i].seq == after[i - 1].seq + 1);
  check_same_run(want, final_metrics(cut.path()));
  // The eval records of both runs agree step by step (the resumed run repeats some evals).
  auto ref_evals = test::records_of(test::read_records(ref / "metrics.jsonl"), protocol::RecordKind::eval);
  auto cut_evals = test::records_of(after, protocol::RecordKind::eval);
  CHECK(cut_evals.back().step == ref_evals.back().step);
  CHECK(cut_evals.back().samples == ref_evals.back().samples);
}

TEST_CASE("SIGUSR2 writes a checkpoint and exits 75; the restart finishes the same run", "[checkpoint][cli]") {
  test::TempDir ref, cut;
  write_params(ref.path());
  write_params(cut.path());
  // No timer checkpoints here: the one on SIGUSR2 is the only one.
  for (auto* d : {&ref, &cut}) {
    auto text = test::read_file(*d / "params.json");
    text.replace(text.find("\"checkpoint_every_s\":0.1"), 24, "\"checkpoint_every_s\":0  ");
    test::write_file(*d / "params.json", text);
  }
  REQUIRE(start_trainer(ref.path()).wait() == 0);
  test::Process p = start_trainer(cut.path());
  REQUIRE(test_support::wait_until(
      [&] { return test::read_file(cut / "metrics.jsonl").find("\"kind\":\"eval\"") != std::string::npos; },
      std::chrono::seconds(60), std::chrono::milliseconds(2)));
  REQUIRE(::kill(p.pid, SIGUSR2) == 0);
  REQUIRE(p.wait() == protocol::kExitStopped);
  auto recs = test::read_records(cut / "metrics.jsonl");
  auto ckpts = test::records_of(recs, protocol::RecordKind::checkpoint);
  REQUIRE(ckpts.size() == 1);
  CHECK(fs::exists(ckpts[0].text));
  CHECK(recs.back().text.find("SIGUSR2") != std::string::npos);
  REQUIRE(start_trainer(cut.path()).wait() == 0);
  check_same_run(final_metrics(ref.path()), final_metrics(cut.path()));
}
