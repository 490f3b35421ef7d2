// The dlsweep-train binary as the orchestrator sees it: exit codes, stderr messages, records.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/protocol.hpp"
#include "tests/trainer/test_util.hpp"
#include "tests/support/wait_until.hpp"

extern char** environ;

using namespace dlsweep;
namespace test = dlsweep::trainer::test;
namespace fs = std::filesystem;

namespace {

struct Proc {
  pid_t pid = -1;
  int wait() {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

/// Starts dlsweep-train with `args`, stdout/stderr into files in `dir`.
Proc start(const fs::path& dir, std::vector<std::string> args) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (dir / "out.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, (dir / "err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  args.insert(args.begin(), DLSWEEP_TRAIN_BIN);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Proc p;
  REQUIRE(posix_spawn(&p.pid, DLSWEEP_TRAIN_BIN, &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  return p;
}

int run(const fs::path& dir, std::vector<std::string> args) { return start(dir, std::move(args)).wait(); }

/// A trial dir whose params train long enough to be interrupted.
void write_long_params(const test::TempDir& tmp) {
  test::write_file(tmp / "params.json",
                   R"({"dataset":"fashion-mnist","data_dir":")" + std::string(DLSWEEP_FMNIST_DIR) +
                       R"(","train_subset":1000,"test_subset":100,"epochs":10000,"batch_size":100,"hidden":[32]})");
}

}  // namespace

TEST_CASE("dlsweep-train --help lists the parameters and exits 0", "[cli]") {
  test::TempDir tmp;
  REQUIRE(run(tmp.path(), {"--help"}) == 0);
  auto out = test::read_file(tmp / "out.txt");
  CHECK(out.find("--trial-dir") != std::string::npos);
  CHECK(out.find("warmup_start") != std::string::npos);
}

TEST_CASE("bad params.json exits 2 with a message naming the key", "[cli]") {
  test::TempDir tmp;
  SECTION("unknown key") {
    test::write_file(tmp / "params.json", R"({"learning_rate": 0.1})");
    REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 2);
    auto err = test::read_file(tmp / "err.txt");
    CHECK(err.find("params.json: learning_rate") != std::string::npos);
    CHECK(err.find("unknown parameter") != std::string::npos);
    // The reason is also recorded for the study database.
    auto metrics = test::read_file(tmp / "metrics.jsonl");
    CHECK(metrics.find("\"kind\":\"log\"") != std::string::npos);
    CHECK(metrics.find("learning_rate") != std::string::npos);
  }
  SECTION("bad value") {
    test::write_file(tmp / "params.json", R"({"lr_rule": "cubic"})");
    REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 2);
    auto err = test::read_file(tmp / "err.txt");
    CHECK(err.find("params.json: lr_rule") != std::string::npos);
    CHECK(err.find("linear") != std::string::npos);
  }
  SECTION("batch larger than the dataset") {
    test::write_file(tmp / "params.json", R"({"dataset": "synthetic", "train_subset": 100, "batch_size": 200})");
    REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 2);
    CHECK(test::read_file(tmp / "err.txt").find("params.json: batch_size") != std::string::npos);
  }
  SECTION("missing dataset files") {
    test::write_file(tmp / "params.json", R"({"data_dir": ")" + (tmp / "nowhere").string() + R"("})");
    REQUIRE(run(tmp.path(), {"--params", (tmp / "params.json").string(), "--trial-dir", tmp.path().string()}) == 2);
    CHECK(test::read_file(tmp / "err.txt").find("nowhere") != std::string::npos);
  }
  SECTION("no trial directory") {
    REQUIRE(::unsetenv(protocol::kEnvTrialDir) == 0);
    REQUIRE(run(tmp.path(), {}) == 2);
    CHECK(test::read_file(tmp / "err.txt").find("--trial-dir") != std::string::npos);
  }
}

TEST_CASE("bf16_kernels: native where the CPU has no bf16 kernels exits 1 (the node lacks them), naming the key",
          "[cli][bf16]") {
  test::TempDir tmp;
  test::write_file(tmp / "params.json",
                   R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,"batch_size":64,)"
                   R"("hidden":[16],"precision":"bf16","bf16_kernels":"native"})");
  // Capped at AVX2, oneDNN has no bf16 kernels on any CPU.
  const char* old = std::getenv("DNNL_MAX_CPU_ISA");
  const std::string saved = old ? old : "";
  REQUIRE(::setenv("DNNL_MAX_CPU_ISA", "AVX2", 1) == 0);
  const int code = run(tmp.path(), {"--trial-dir", tmp.path().string()});
  if (old) ::setenv("DNNL_MAX_CPU_ISA", saved.c_str(), 1);
  else ::unsetenv("DNNL_MAX_CPU_ISA");
  // A failure, not bad input (2, never retried): another node of the cluster may have them.
  CHECK(code == 1);
  const auto err = test::read_file(tmp / "err.txt");
  INFO(err);
  CHECK(err.find("params.json: bf16_kernels") != std::string::npos);
  CHECK(err.find("oneDNN has none on this CPU (oneDNN isa avx2") != std::string::npos);
  CHECK(err.find("bf16_kernels: auto") != std::string::npos);
}

TEST_CASE("a finished run exits 0 with a final record; the trial dir comes from the environment", "[cli]") {
  test::TempDir tmp;
  test::write_file(tmp / "params.json",
                   R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,"batch_size":64,"hidden":[16]})");
  REQUIRE(::setenv(protocol::kEnvTrialDir, tmp.path().c_str(), 1) == 0);
  int code = run(tmp.path(), {});
  REQUIRE(::unsetenv(protocol::kEnvTrialDir) == 0);
  REQUIRE(code == 0);
  auto metrics = test::read_file(tmp / "metrics.jsonl");
  CHECK(metrics.find("\"kind\":\"final\"") != std::string::npos);
  CHECK(test::read_file(tmp / "out.txt").find("val_acc") != std::string::npos);
}

TEST_CASE("stop_epoch: exit 0 with a checkpoint; the next interval resumes from it with a new lr_schedule stage",
          "[cli][pbt]") {
  test::TempDir tmp;
  const std::string common =
      R"("dataset":"synthetic","train_subset":640,"test_subset":64,"epochs":4,"batch_size":64,"hidden":[16],)"
      R"("checkpoint_every_s":0,)";
  test::write_file(tmp / "params.json", "{" + common + R"("stop_epoch":2,"lr_schedule":"0:0.1"})");
  REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 0);
  auto first = test::read_file(tmp / "metrics.jsonl");
  CHECK(first.find("\"kind\":\"checkpoint\"") != std::string::npos);
  CHECK(first.find("\"kind\":\"final\",\"metrics\"") != std::string::npos);
  CHECK(fs::exists(tmp / "checkpoints" / "ckpt-000000000020.dlck"));
  test::write_file(tmp / "params.json", "{" + common + R"("lr_schedule":"0:0.1,2:0.05"})");
  REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 0);
  auto both = test::read_file(tmp / "metrics.jsonl");
  CHECK(both.find("resumed from") != std::string::npos);
  CHECK(both.find("\"lr\":0.025") != std::string::npos);  // 0.05 at batch 64 of base_batch 128
  SECTION("a bad lr_schedule is bad input naming the key") {
    test::write_file(tmp / "params.json", "{" + common + R"("lr_schedule":"0:0.1,1:0"})");
    REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 2);
    CHECK(test::read_file(tmp / "err.txt").find("params.json: lr_schedule") != std::string::npos);
  }
}

TEST_CASE("control.json stop makes the trainer exit 75 with a log record", "[cli]") {
  test::TempDir tmp;
  write_long_params(tmp);
  test::write_file(tmp / "control.json", protocol::to_json(protocol::Control{"stop", "pruned"}));
  REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == protocol::kExitStopped);
  auto metrics = test::read_file(tmp / "metrics.jsonl");
  CHECK(metrics.find("stopped on request") != std::string::npos);
  CHECK(metrics.find("pruned") != std::string::npos);
  CHECK(metrics.find("\"kind\":\"final\"") == std::string::npos);
}

TEST_CASE("SIGTERM finishes the step and exits 75", "[cli]") {
  test::TempDir tmp;
  write_long_params(tmp);
  Proc p = start(tmp.path(), {"--trial-dir", tmp.path().string()});
  // Wait until training has produced its first evaluation, then ask it to stop.
  REQUIRE(test_support::wait_until(
      [&] { return test::read_file(tmp / "metrics.jsonl").find("\"kind\":\"eval\"") != std::string::npos; },
      std::chrono::seconds(30)));
  REQUIRE(::kill(p.pid, SIGTERM) == 0);
  REQUIRE(p.wait() == protocol::kExitStopped);
  CHECK(test::read_file(tmp / "metrics.jsonl").find("SIGTERM") != std::string::npos);
}

TEST_CASE("device: cuda trains on the GPU where one answers, else exits 1 naming device and the fix", "[cli][device]") {
  test::TempDir tmp;
  test::write_file(tmp / "params.json",
                   R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,"batch_size":64,)"
                   R"("hidden":[16],"device":"cuda"})");
  const int code = run(tmp.path(), {"--trial-dir", tmp.path().string()});
  const auto err = test::read_file(tmp / "err.txt");
  INFO(err);
  if (code == 0) {  // a CUDA build on a GPU node (scripts/gpu-check.sh)
    CHECK(test::read_file(tmp / "metrics.jsonl").find("cuda kernels on cuda:") != std::string::npos);
  } else {
    // What the node lacks, never bad input: another node may have a GPU.
    CHECK(code == 1);
    CHECK(err.find("params.json: device") != std::string::npos);
    CHECK(err.find("device: cpu") != std::string::npos);  // the fix names the way out
  }
}

TEST_CASE("comm: nccl where this node has no GPU (or the build no NCCL) exits 1 naming comm, never 2", "[cli][device]") {
  test::TempDir tmp;
  test::write_file(tmp / "params.json",
                   R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,"batch_size":64,)"
                   R"("hidden":[16],"device":"cuda","comm":"nccl"})");
  const int code = run(tmp.path(), {"--trial-dir", tmp.path().string()});
  const auto err = test::read_file(tmp / "err.txt");
  INFO(err);
  if (code == 0) return;  // a GPU node with a CUDA build: trained (gpu-comm-check.sh checks the rest)
  CHECK(code == 1);
  CHECK(err.find("params.json: comm") != std::string::npos);
}

TEST_CASE("device: auto trains where it can, names the device, and says why it fell back to the CPU",
          "[cli][device]") {
  test::TempDir tmp;
  test::write_file(tmp / "params.json",
                   R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,"batch_size":64,)"
                   R"("hidden":[16],"device":"auto"})");
  REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 0);
  const auto metrics = test::read_file(tmp / "metrics.jsonl");
  const bool gpu = metrics.find("cuda kernels on cuda:") != std::string::npos;
  CHECK((gpu || metrics.find("onednn kernels on cpu") != std::string::npos));
  std::vector<std::string> why;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);)
    if (auto r = protocol::parse_record(line); r && r->kind == protocol::RecordKind::log &&
                                               r->text.rfind("device auto: training on the CPU, because ", 0) == 0)
      why.push_back(r->text);
  if (gpu) {
    CHECK(why.empty());
  } else {
    // Exactly one record, with device: cuda's reason: no CUDA in the build, no plugin, no GPU...
    REQUIRE(why.size() == 1);
    INFO(why.front());
    CHECK((why.front().find("without CUDA") != std::string::npos || why.front().find("GPU") != std::string::npos ||
           why.front().find("plugin") != std::string::npos || why.front().find("CUDA device") != std::string::npos));
  }
}

TEST_CASE("precision: tf32 on the CPU exits 2 naming precision and device: cuda", "[cli][device]") {
  test::TempDir tmp;
  test::write_file(tmp / "params.json",
                   R"({"dataset":"synthetic","train_subset":256,"test_subset":64,"epochs":1,"batch_size":64,)"
                   R"("hidden":[16],"precision":"tf32","device":"cpu"})");
  REQUIRE(run(tmp.path(), {"--trial-dir", tmp.path().string()}) == 2);
  const auto err = test::read_file(tmp / "err.txt");
  INFO(err);
  CHECK(err.find("params.json: precision") != std::string::npos);
  CHECK(err.find("device: cuda") != std::string::npos);
}
