// analysis_test_support.hpp — builders of hand-made trials for the analysis tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/study_data.hpp"

namespace dlsweep::analysis::testing {

/// A COMPLETE trial at `batch` with base_lr `lr` and `seed`; reached the target when `steps`
/// is given (samples = steps x batch, time as given).
inline TrialData trial(std::int64_t number, std::int64_t batch, double lr, int seed, std::optional<std::int64_t> steps,
                       std::optional<double> time = std::nullopt, double best = 0.9,
                       const std::string& state = "COMPLETE") {
  TrialData t;
  t.number = number;
  t.state = state;
  t.batch = batch;
  t.params = {{"batch_size", batch}, {"base_lr", lr}, {"seed", seed}};
  t.best_value = best;
  if (steps) {
    t.steps_to_target = *steps;
    t.samples_to_target = *steps * batch;
    t.time_to_target_s = time ? *time : static_cast<double>(*steps) / 10.0;
  }
  return t;
}

inline StudyData study_of(std::vector<TrialData> trials, std::optional<double> target = 0.88) {
  return StudyData{std::string("s"), std::string("val_acc"), std::string("max"), target, std::move(trials)};
}

}  // namespace dlsweep::analysis::testing
