// to_json.hpp — JSON forms of the analysis results (for `--format json` and the report's
// chart data). Keys are snake_case and numbers are plain numbers; absent optionals are null.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/batch_model.hpp"
#include "analysis/explain.hpp"
#include "analysis/goodput.hpp"
#include "analysis/noise.hpp"
#include "analysis/speedup.hpp"
#include "analysis/target_table.hpp"

namespace dlsweep::analysis {

nlohmann::json to_json(const Stat& s);
nlohmann::json to_json(const BatchFit& f);
nlohmann::json to_json(const TargetTable& t);
nlohmann::json to_json(const std::vector<TrialNoise>& n);
nlohmann::json to_json(const NoiseSummary& n);
nlohmann::json to_json(const std::vector<LearningSpeedup>& s);
nlohmann::json to_json(const ScalingTable& t);
nlohmann::json to_json(const StepTimeModel& m);
nlohmann::json to_json(const Prediction& p);
nlohmann::json to_json(const Plan& p);
nlohmann::json to_json(const Explanation& e);

}  // namespace dlsweep::analysis
