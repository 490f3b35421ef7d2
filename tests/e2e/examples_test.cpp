// Runs every study in examples/ through `dlsweep submit`, shortened so the whole suite
// stays quick: embedded-trainer studies get 1 epoch on a 12000-image subset and at most 4
// trials (population-based training: 2 members x 2 intervals of 1 epoch); command studies
// run as written.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "run_command.hpp"

namespace fs = std::filesystem;

TEST_CASE("every example study runs through dlsweep submit") {
  fs::path examples = fs::path(DLSWEEP_SOURCE_DIR) / "examples";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(examples)) {
    auto ext = entry.path().extension();
    if (ext != ".yaml" && ext != ".yml") continue;
    if (entry.path().filename().string().rfind("slurm", 0) == 0) continue;  // needs a cluster: tested elsewhere
    ++seen;
    SECTION(entry.path().filename().string()) {
      YAML::Node study = YAML::LoadFile(entry.path().string());
      if (study["trial"]["trainer"]) {
        study["trial"]["trainer"]["epochs"] = 1;
        study["trial"]["trainer"]["train_subset"] = 12000;
        // Batches larger than the subset are refused at submit (no trial could run them): the
        // shortened copy keeps the example's batches up to the subset.
        if (study["space"] && study["space"]["batch_size"] && study["space"]["batch_size"].IsSequence()) {
          YAML::Node kept(YAML::NodeType::Sequence);
          for (const auto& b : study["space"]["batch_size"])
            if (b.as<long>() <= 12000) kept.push_back(b);
          study["space"]["batch_size"] = kept;
        }
        study["trial"]["trainer"]["test_subset"] = 1000;
        if (!study["search"]) study["search"] = YAML::Node(YAML::NodeType::Map);
        study["search"]["trials"] = 4;
        if (study["search"]["algorithm"] && study["search"]["algorithm"].as<std::string>() == "branch") {
          // A branching study: its trials follow from its plan (no `trials`): one point, two seeds.
          study["search"].remove("trials");
          study["search"]["points"] = YAML::Load("[0.25]");
          study["search"]["delta"] = 0.5;
          study["search"]["seeds"] = 2;
          study["search"]["max_seeds"] = 2;
        }
        if (study["search"]["algorithm"] && study["search"]["algorithm"].as<std::string>() == "pbt") {
          // Population-based training: 2 members x 2 intervals of 1 epoch (trials = population x generations).
          study["trial"]["trainer"]["epochs"] = 2;
          study["search"]["population"] = 2;
          study["search"]["interval"]["every"] = 1;
        }
      }
      auto dir = fresh_dir("example-" + entry.path().stem().string());
      study["runs_dir"] = (dir / "runs").string();
      // Keep {study_dir} pointing at examples/: write the shortened copy beside the original.
      fs::path copy = examples / (".test-" + std::to_string(::getpid()) + "-" + entry.path().filename().string());
      { std::ofstream(copy) << YAML::Dump(study) << "\n"; }
      auto db = dir / "sweep.db";
      auto r = run_dlsweep(db, {"submit", copy.string()}, dir);
      fs::remove(copy);
      INFO(r.err);
      CHECK(r.exit_code == 0);
      auto res = run_dlsweep(db, {"results", study["name"].as<std::string>(), "--format", "json"}, dir);
      REQUIRE(res.exit_code == 0);
      auto j = nlohmann::json::parse(res.out);
      REQUIRE_FALSE(j.empty());
      int complete = 0;
      for (const auto& t : j) complete += t["state"] == "COMPLETE";
      CHECK(complete >= 1);
    }
  }
  CHECK(seen >= 2);
}

TEST_CASE("every Slurm example validates and renders its batch script (dry run); the GPU one requests a GPU per task") {
  fs::path examples = fs::path(DLSWEEP_SOURCE_DIR) / "examples";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(examples)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("slurm", 0) != 0 || (entry.path().extension() != ".yaml" && entry.path().extension() != ".yml"))
      continue;
    ++seen;
    SECTION(name) {
      auto dir = fresh_dir("example-dry-" + entry.path().stem().string());
      YAML::Node study = YAML::LoadFile(entry.path().string());
      study["runs_dir"] = (dir / "runs").string();
      fs::path copy = dir / name;
      { std::ofstream(copy) << YAML::Dump(study) << "\n"; }
      auto r = run_dlsweep(dir / "sweep.db", {"submit", copy.string(), "--dry-run"}, dir);
      INFO(r.out << r.err);
      REQUIRE(r.exit_code == 0);
      const fs::path script = dir / "runs" / (study["name"].as<std::string>() + ".dry-run") / "dry-run-1.sh";
      REQUIRE(fs::exists(script));
      std::ifstream in(script);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (study["trial"]["trainer"]["device"] && study["trial"]["trainer"]["device"].as<std::string>() == "cuda")
        CHECK(text.find("#SBATCH --gpus-per-task=1") != std::string::npos);
    }
  }
  CHECK(seen >= 2);
}
