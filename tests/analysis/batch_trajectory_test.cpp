// The winner's batch over training as `best --explain` prints it (analysis/batch_trajectory).
#include <catch2/catch.hpp>

#include "analysis/batch_trajectory.hpp"

using dlsweep::analysis::BatchDecision;
using dlsweep::analysis::batch_trajectory_json;
using dlsweep::analysis::batch_trajectory_line;

TEST_CASE("batch trajectory: the changes in order, kept batches folded, B_simple's first and last estimate") {
  std::vector<BatchDecision> d = {{0, 0, 0.0, 64, std::nullopt},  {0, 100, 0.5, 64, 38.0},   {0, 200, 1.0, 77, 120.0},
                                  {0, 300, 1.5, 77, 300.0},         {0, 400, 2.0, 132, 510.0}, {0, 500, 3.0, 189, 840.0}};
  CHECK(batch_trajectory_line(d) ==
        "batch over training (batch_ramp adaptive, 6 decisions): 64 → 77 (step 200, epoch 1) → 132 (step 400, epoch 2) "
        "→ 189 (step 500, epoch 3); B_simple 38 → 840");
  auto j = batch_trajectory_json(d);
  CHECK(j["batch_size"] == nlohmann::json({64, 64, 77, 77, 132, 189}));
  CHECK(j["grad_noise_scale"][0].is_null());
  CHECK(j["step"].size() == 6);
}

TEST_CASE("batch trajectory: one decision, no estimate, and many changes shortened around an ellipsis") {
  CHECK(batch_trajectory_line({}).empty());
  CHECK(batch_trajectory_line({{0, 0, 0.0, 128, std::nullopt}}) ==
        "batch over training (batch_ramp adaptive, 1 decision): 128");
  std::vector<BatchDecision> many;
  for (int i = 0; i < 20; ++i) many.push_back({0, i * 10, i * 0.1, 64 + i, std::nullopt});
  const auto line = batch_trajectory_line(many, 4);
  CHECK(line.starts_with("batch over training (batch_ramp adaptive, 20 decisions): 64 → 65 (step 10, epoch 0.1) → 66"));
  CHECK(line.find(" → …") != std::string::npos);
  CHECK(line.ends_with("→ 82 (step 180, epoch 1.8) → 83 (step 190, epoch 1.9)"));
  CHECK(line.find("→ 70 ") == std::string::npos);  // the middle is left out
}
