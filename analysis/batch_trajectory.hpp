// batch_trajectory.hpp — a trial's batch over training, as `best --explain` tells it: the
// decisions of `batch_ramp: adaptive` (the trainer's `log` records with batch_size and
// grad_noise_scale, docs/trainer.md) reduced to one line a user can read, and its JSON.
// Pure: no I/O (analysis/load.cpp reads the records).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dlsweep::analysis {

/// One decision: where it was taken, the batch chosen, and B_simple then (nullopt before the
/// first estimate).
struct BatchDecision {
  int attempt = 0;
  std::int64_t step = 0;
  double epoch = 0;
  std::int64_t batch = 0;
  std::optional<double> noise_scale;
};

/// "batch over training (batch_ramp adaptive, 6 decisions): 64 → 77 (step 420, epoch 1.5) → ...
/// → 189 (step 2100, epoch 3); B_simple 38 → 840". Decisions that keep the batch are folded;
/// more than `max_changes` changes show the first and last ones around "…". "" when empty.
std::string batch_trajectory_line(const std::vector<BatchDecision>& decisions, std::size_t max_changes = 8);

/// {"step": [...], "epoch": [...], "batch_size": [...], "grad_noise_scale": [...|null], "attempt": [...]}.
nlohmann::json batch_trajectory_json(const std::vector<BatchDecision>& decisions);

}  // namespace dlsweep::analysis
