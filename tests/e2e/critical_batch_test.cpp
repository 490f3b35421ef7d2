// examples/critical-batch.yaml, shortened (3 batch sizes x 2 LRs, 3 epochs of a 12000-image
// subset, target 0.70 instead of 0.88): the sweep runs and the answer comes out —
// `best --explain` with the batch-size model, its regime and the noise scale at target,
// the same in JSON, and `plan` with its "model prediction" per rank count. Plain `best`
// stays short.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "run_command.hpp"

namespace fs = std::filesystem;

namespace {
// "winner: trials 1,2" or "winner: trial 3", as the text form writes it.
std::string fmt_winner(const nlohmann::json& j) {
  const auto& ts = j["winner"]["trials"];
  std::string s = ts.size() == 1 ? "winner: trial " : "winner: trials ";
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ts[i].get<long>());
  }
  return s + " ";
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
}  // namespace

TEST_CASE("critical-batch example, shortened: best --explain and plan answer from the real sweep") {
  YAML::Node study = YAML::LoadFile((fs::path(DLSWEEP_SOURCE_DIR) / "examples" / "critical-batch.yaml").string());
  study["name"] = "e2e-critical-batch";
  auto trainer = study["trial"]["trainer"];
  trainer["epochs"] = 3;
  trainer["train_subset"] = 12000;
  trainer["test_subset"] = 2000;
  study["objective"]["target"] = 0.70;
  study["space"]["batch_size"] = std::vector<int>{32, 128, 512};
  study["space"]["base_lr"] = std::vector<double>{0.05, 0.1};
  auto dir = fresh_dir("critical-batch");
  study["runs_dir"] = (dir / "runs").string();
  { std::ofstream(dir / "study.yaml") << YAML::Dump(study) << "\n"; }
  auto db = dir / "sweep.db";
  auto sub = run_dlsweep(db, {"submit", "study.yaml"}, dir);
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);

  auto ex = run_dlsweep(db, {"best", "e2e-critical-batch", "--explain"}, dir);
  INFO(ex.out << ex.err);
  REQUIRE(ex.exit_code == 0);
  CHECK(ex.out.find("winner: trial") != std::string::npos);
  CHECK(ex.out.find(" of 6 COMPLETE trials reached the target 0.7") != std::string::npos);
  CHECK(ex.out.find("batch-size model: B_crit = ") != std::string::npos);
  CHECK(ex.out.find("bootstrap interval") != std::string::npos);
  // 3 short batch sizes may leave B_crit undetermined: then no regime is named, and it says so.
  CHECK((ex.out.find("regime of batch ") != std::string::npos) != (ex.out.find("B_crit is not determined") != std::string::npos));
  CHECK(ex.out.find("speedups vs batch 32: learning ") != std::string::npos);
  CHECK(ex.out.find("gradient noise scale B_simple at the target: median ") != std::string::npos);
  CHECK(ex.out.find("seed noise unknown") != std::string::npos);  // one seed per configuration

  auto js = run_dlsweep(db, {"best", "e2e-critical-batch", "--explain", "--format", "json"}, dir);
  REQUIRE(js.exit_code == 0);
  auto j = nlohmann::json::parse(js.out);
  CHECK(j["criterion"] == "time-to-target");
  REQUIRE(j["batch_model"].is_object());
  const double b_crit = j["batch_model"]["b_crit"].get<double>();
  CHECK(b_crit > 0);
  CHECK(j["batch_model"]["b_crit_lo"].get<double>() <= b_crit);
  CHECK(j["batch_model"]["b_crit_hi"].get<double>() >= b_crit);
  CHECK(j["steps_to_target"]["rows"].size() == 3);
  CHECK(j["noise_scale"]["trials"].get<int>() >= 1);
  CHECK(j["regime"].is_string() == j["batch_model"]["determined"].get<bool>());
  CHECK(j["lines"].size() >= 5);
  // The same winner as the text.
  CHECK(ex.out.find(fmt_winner(j)) != std::string::npos);

  auto plain = run_dlsweep(db, {"best", "e2e-critical-batch"}, dir);
  REQUIRE(plain.exit_code == 0);
  INFO(plain.out);
  CHECK(count_lines(plain.out) <= 7);  // short: the winner, why, and the model line (which checkpoint holds it)
  CHECK(plain.out.find("model: ") != std::string::npos);
  CHECK(plain.out.find("B_crit") == std::string::npos);

  auto plan = run_dlsweep(db, {"plan", "e2e-critical-batch", "--ranks", "1,2,8"}, dir);
  INFO(plan.out << plan.err);
  REQUIRE(plan.exit_code == 0);
  CHECK(plan.out.find("model prediction") != std::string::npos);
  CHECK(plan.out.find("inputs (measured):") != std::string::npos);
  CHECK(plan.out.find("assumptions:") != std::string::npos);
  auto pj = run_dlsweep(db, {"plan", "e2e-critical-batch", "--ranks", "1,2,8", "--format", "json"}, dir);
  REQUIRE(pj.exit_code == 0);
  auto p = nlohmann::json::parse(pj.out);
  CHECK(p["kind"] == "model prediction");
  REQUIRE(p["rows"].size() == 3);
  for (const auto& r : p["rows"]) {
    CHECK(r["best"]["time_to_target_s"].get<double>() > 0);
    CHECK(static_cast<long>(r["best"]["batch"].get<double>()) % r["ranks"].get<long>() == 0);
  }
  CHECK(p["rows"][0]["best"]["allreduce_s"].get<double>() == 0);  // one rank: no allreduce

  auto bad = run_dlsweep(db, {"plan", "e2e-critical-batch", "--ranks", "0"}, dir);
  CHECK(bad.exit_code == 2);
  fs::remove_all(dir);
}
