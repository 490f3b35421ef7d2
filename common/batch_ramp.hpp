// batch_ramp.hpp — the params.json `batch_ramp` value: "none", "smith", "adaptive" (the
// trainer picks the batch as it trains: trainer/schedule/adaptive_batch.hpp), or explicit stages
// "EPOCH:BATCH,EPOCH:BATCH,..." (e.g. "0:256,2:1024,4:4096"). A string, so a study can list
// ramps as plain choices and the study validator checks them through check_param_value.
// batch_plan.hpp lays a ramp out in steps. Also the `lr_schedule` value: "none" or
// "EPOCH:LR,..." (piecewise-constant base LR by epoch), parsed the same way.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.hpp"

namespace dlsweep::trainer::schedule {

/// One explicit ramp stage ("epoch:batch").
struct RampStage {
  double epoch = 0;
  std::int64_t batch = 0;
};

/// A parsed `batch_ramp` value.
struct BatchRamp {
  enum class Kind { none, smith, stages, adaptive };
  Kind kind = Kind::none;
  std::vector<RampStage> stages;  ///< Kind::stages only
};

/// Parses "none", "smith", "adaptive" or "E:B,E:B,..." (epochs non-negative, the first 0, increasing;
/// batches integers in [1, 2^24]). Errors have where = "batch_ramp" and a fix with an example.
Result<BatchRamp> parse_batch_ramp(std::string_view text);

/// One `lr_schedule` stage ("epoch:lr"): the base LR from that epoch on.
struct LrStage {
  double epoch = 0;
  double lr = 0;
};

/// Parses "none" (an empty list) or "E:L,E:L,..." (epochs non-negative, the first 0,
/// increasing; LRs finite and > 0). Errors have where = "lr_schedule" and a fix with an example.
Result<std::vector<LrStage>> parse_lr_schedule(std::string_view text);

}  // namespace dlsweep::trainer::schedule
