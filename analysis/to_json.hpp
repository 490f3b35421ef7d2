// to_json.hpp — JSON forms of the analysis results (for `--format json` and the report's
// chart data). Keys are snake_case and numbers are plain numbers; absent optionals are null.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/batch_model.hpp"
#include "analysis/explain.hpp"
#include "analysis/goodput.hpp"
#include "analysis/grouped_fit.hpp"
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
/// {"param", "epoch_factor", "groups": [...], "lines"}: see grouped_fit.hpp; each group has
/// value, label, trials, complete, batch_sizes, fitted_batch_sizes, b_crit, b_crit_lo,
/// b_crit_hi, level, determined (null without a fit), fit (to_json(BatchFit) | null),
/// cannot_fit (reason | null), points, epochs_reference_batch,
/// largest_batch_within_1_5x_epochs, largest_batch_epochs_ratio.
nlohmann::json to_json(const GroupedFit& g);

}  // namespace dlsweep::analysis
