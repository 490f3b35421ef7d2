// End-to-end: `dlsweep best --explain --group-by optimizer` on a real sweep. The trial is a
// protocol-speaking Python program whose steps to the target follow the batch-size model
// S(B) = S_min (1 + B_crit / B) with a different B_crit per `optimizer` (sgd 400, lars 4000),
// so the grouped fit must find both, in that order, with intervals; a value run at one batch
// size only (lamb reaches the target at batch 1024 alone) must say it cannot be fitted; an unknown parameter is a usage error that
// names the study's parameters.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_command.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kTrial = R"(import json, os
d = os.environ["DLSWEEP_TRIAL_DIR"]
p = json.load(open(os.path.join(d, "params.json")))
s_min, b_crit = {"sgd": (200.0, 400.0), "lars": (150.0, 4000.0), "lamb": (180.0, 2000.0)}[p["optimizer"]]
b = p["batch_size"]
steps = int(round(s_min * (1 + b_crit / b)))
out = open(os.path.join(d, "metrics.jsonl"), "a")
def record(seq, kind, step, acc):
    out.write(json.dumps({"seq": seq, "kind": kind, "step": step, "epoch": step * b / 60000.0,
                          "samples": step * b, "wall_s": step * 0.001, "metrics": {"val_acc": acc}}) + "\n")
    out.flush()
# lamb reaches the target at batch 1024 only: one batch size, nothing to fit.
acc = 0.9 if p["optimizer"] != "lamb" or b == 1024 else 0.8
record(0, "eval", steps // 2, 0.5)
record(1, "eval", steps, acc)
record(2, "final", steps, acc)
)";

const char* kStudy = R"(name: e2e-grouped-fit
backend: {kind: local, max_concurrent: 2}
trial:
  command: [python3, "{study_dir}/trial.py"]
  max_retries: 0
objective: {metric: val_acc, mode: max, target: 0.88}
search: {algorithm: grid}
space:
  optimizer: [sgd, lars, lamb]
  batch_size: [64, 128, 256, 512, 1024, 2048, 4096, 8192]
)";

const json& group(const json& groups, const std::string& label) {
  for (const auto& g : groups)
    if (g["label"] == label) return g;
  FAIL("no group " << label);
  return groups;
}

}  // namespace

TEST_CASE("best --explain --group-by optimizer fits B_crit per optimizer on a real sweep") {
  const auto dir = fresh_dir("grouped-fit");
  std::ofstream(dir / "trial.py") << kTrial;
  std::ofstream(dir / "study.yaml") << kStudy;
  const auto db = dir / "sweep.db";
  const auto r = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto js = run_dlsweep(db, {"best", "e2e-grouped-fit", "--explain", "--group-by", "optimizer", "--format", "json"}, dir);
  INFO(js.out << js.err);
  REQUIRE(js.exit_code == 0);
  const json j = json::parse(js.out);
  REQUIRE(j["group_by"]["param"] == "optimizer");
  CHECK(j["group_by"]["epoch_factor"] == 1.5);
  const json& groups = j["groups"];
  REQUIRE(groups.size() == 3);
  const json& sgd = group(groups, "sgd");
  const json& lars = group(groups, "lars");
  for (const json* g : {&sgd, &lars}) {
    CHECK((*g)["trials"] == 8);
    CHECK((*g)["batch_sizes"] == 8);
    CHECK((*g)["fitted_batch_sizes"] == 8);
    REQUIRE((*g)["b_crit"].is_number());
    CHECK((*g)["b_crit_lo"].get<double>() <= (*g)["b_crit"].get<double>());
    CHECK((*g)["b_crit_hi"].get<double>() >= (*g)["b_crit"].get<double>());
    CHECK((*g)["cannot_fit"].is_null());
    CHECK((*g)["epochs_reference_batch"] == 64);
    CHECK((*g)["largest_batch_within_1_5x_epochs"].is_number_integer());
  }
  CHECK(sgd["b_crit"].get<double>() == Approx(400).epsilon(0.1));
  CHECK(lars["b_crit"].get<double>() == Approx(4000).epsilon(0.1));
  CHECK(sgd["b_crit_hi"].get<double>() < lars["b_crit_lo"].get<double>());
  // samples/epochs at batch 64: sgd 200(1+400/64)x64 = 92800; within 1.5x: 256 (1.38x), not 512 (2.0x).
  CHECK(sgd["largest_batch_within_1_5x_epochs"] == 256);
  CHECK(lars["largest_batch_within_1_5x_epochs"] == 2048);
  const json& lamb = group(groups, "lamb");
  CHECK(lamb["b_crit"].is_null());
  CHECK(lamb["batch_sizes"] == 8);
  CHECK(lamb["fitted_batch_sizes"] == 1);
  CHECK(lamb["largest_batch_within_1_5x_epochs"] == 1024);
  CHECK(lamb["cannot_fit"].get<std::string>().find("cannot fit") != std::string::npos);
  // The rest of --explain is still there.
  CHECK(j["batch_model"].is_object());
  CHECK(j["winner"].is_object());

  const auto tx = run_dlsweep(db, {"best", "e2e-grouped-fit", "--explain", "--group-by", "optimizer"}, dir);
  INFO(tx.out << tx.err);
  REQUIRE(tx.exit_code == 0);
  CHECK(tx.out.find("B_crit per optimizer") != std::string::npos);
  CHECK(tx.out.find("optimizer=sgd: B_crit = ") != std::string::npos);
  CHECK(tx.out.find("optimizer=lamb: cannot fit") != std::string::npos);
  CHECK(tx.out.find("optimizer=lars vs optimizer=sgd") != std::string::npos);

  const auto bad = run_dlsweep(db, {"best", "e2e-grouped-fit", "--explain", "--group-by", "optimiser"}, dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("'optimiser'") != std::string::npos);
  CHECK(bad.err.find("batch_size, optimizer") != std::string::npos);
}
