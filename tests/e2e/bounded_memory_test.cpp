// The orchestrator's memory is bounded whatever a trial writes (common/jsonl_tail.hpp): a
// trial that writes a 1 GB line into metrics.jsonl (a tensor printed into the wrong file)
// between two records, under an address-space limit of 300 MB for the whole `dlsweep submit`
// (and its trial). Before the bounded reader the orchestrator held the line twice and died
// with std::bad_alloc; now the line is skipped as it streams past, named with its size, and
// the records on both sides of it are kept.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;

TEST_CASE("e2e bounded memory: a 1 GB metrics line is skipped and named under a 300 MB address-space limit") {
  auto dir = fresh_dir("runaway-line");
  std::ofstream(dir / "trial.py") << R"(import json, os
d = os.environ["DLSWEEP_TRIAL_DIR"]
with open(os.path.join(d, "metrics.jsonl"), "a") as out:
    out.write(json.dumps({"seq": 0, "kind": "eval", "step": 1, "epoch": 1, "samples": 64, "wall_s": 1.0,
                          "metrics": {"val_acc": 0.5}}) + "\n")
    chunk = "x" * (1 << 20)
    for _ in range(1024):
        out.write(chunk)
    out.write("\n")
    out.write(json.dumps({"seq": 1, "kind": "final", "step": 2, "epoch": 2, "samples": 128, "wall_s": 2.0,
                          "metrics": {"val_acc": 0.6}}) + "\n")
)";
  std::ofstream(dir / "study.yaml") << R"(name: runaway
backend: {kind: local, max_concurrent: 1}
trial:
  command: [python3, "{study_dir}/trial.py"]
objective: {metric: val_acc, mode: max}
search: {algorithm: grid}
space:
  x: [1]
)";
  const auto db = dir / "sweep.db";
  auto r = run_command({"prlimit", "--as=" + std::to_string(300ull << 20), DLSWEEP_BIN, "--db", db.string(), "submit",
                        "study.yaml"},
                       dir);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  const std::string all = r.out + r.err;
  CHECK(all.find("skipped a line of 1073741824 bytes at byte") != std::string::npos);
  auto res = run_dlsweep(db, {"results", "runaway", "--format", "json"}, dir);
  REQUIRE(res.exit_code == 0);
  auto j = nlohmann::json::parse(res.out);
  REQUIRE(j.size() == 1);
  CHECK(j[0]["state"] == "COMPLETE");
  CHECK(j[0]["value"] == 0.6);  // the record after the runaway line was read
  fs::remove_all(dir / "dlsweep-runs");  // 1 GB
}
