// The torchrun launch shim's exit status: the trial's outcome comes from its workers, not
// from torchrun, which calls any failed worker "exit 1". A fake `torchrun` on PATH starts
// the workers as the real one does (each through the shim's torchrun-worker mode) and
// exits 1 when one of them failed.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "common/shell_quote.hpp"
#include "schedulers/launch.hpp"

namespace fs = std::filesystem;
using namespace dlsweep;

namespace {

constexpr const char* kFakeTorchrun = R"(#!/bin/bash
n=1
while [[ $1 == --* ]]; do
  case $1 in
    --nproc_per_node=*) n=${1#*=} ;;
    --log_dir|--redirects|--tee) shift ;;
  esac
  shift
done
rc=0 pids=()
for ((r = 0; r < n; r++)); do RANK=$r "$@" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
)";

/// Runs `worker_script` (sh -c, $RANK set) on 2 ranks under the shim and the fake torchrun.
int run_node(const fs::path& dir, const std::string& worker_script) {
  auto argv = sched::local_launch_argv({"/bin/sh", "-c", worker_script}, 2, "torchrun", "mpirun", false);
  REQUIRE(argv.has_value());
  std::string cmd = fmt::format("cd {} && PATH={}:$PATH DLSWEEP_TRIAL_DIR={} MASTER_ADDR=127.0.0.1 MASTER_PORT=1 {}",
                                shell_quote(dir.string()), shell_quote((dir / "bin").string()),
                                shell_quote(dir.string()), shell_join(*argv));
  int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("torchrun shim: the node exits with its workers' status, not torchrun's 1") {
  fs::path dir = fs::temp_directory_path() / fmt::format("dlsweep-shim-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  {
    std::ofstream f(dir / "bin" / "torchrun");
    f << kFakeTorchrun;
  }
  fs::permissions(dir / "bin" / "torchrun", fs::perms::owner_all);

  // Both workers stopped on request (pruned, no signal anywhere): 75, as if one process.
  CHECK(run_node(dir, "exit 75") == 75);
  // One stopped, one finished: stopped.
  CHECK(run_node(dir, "[ \"$RANK\" = 0 ] && exit 75; exit 0") == 75);
  // Diverged on every rank: 3 (deterministic, not retried) rather than a transient 1.
  CHECK(run_node(dir, "exit 3") == 3);
  // A real failure on one rank beats a stop on the other.
  CHECK(run_node(dir, "[ \"$RANK\" = 1 ] && exit 3; exit 75") == 3);
  // All fine: 0; a worker that never recorded its status leaves torchrun's word.
  CHECK(run_node(dir, "exit 0") == 0);
  fs::remove_all(dir);
}
