// grouped_fit.hpp — the batch-size model fitted once per value of one parameter
// (docs/math.md#the-batch-size-model-per-group): does LARS or LAMB move the critical batch?
// `dlsweep best --explain --group-by optimizer` and the report's "B_crit per value" table and
// chart.
//
// For each value v of the parameter, the trials with params[param] == v (trials without the
// parameter, e.g. a `when:` parameter switched off, form one group of their own) are a study
// of their own: their steps-to-result table (target_table.hpp: best seed group per batch size
// over the other parameters, COMPLETE single-batch trials) and its fit (fit_batch_model: the
// same least squares and bootstrap interval as the whole study's). A group with fewer than 3
// batch sizes at the target says it cannot be fitted, with fit_batch_model's reason; no
// number is invented for it.
//
// Beside the fit, per group, the largest batch that reached the target within
// kEpochBudgetFactor (1.5) times the epochs of the group's smallest batch that reached it
// (epochs on one dataset are samples / its size, so the ratio is the samples ratio): the
// measured answer to "how far can I push the batch before it costs more passes over the data".
// Pure: a StudyData in, a GroupedFit out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/batch_model.hpp"
#include "analysis/study_data.hpp"
#include "common/result.hpp"

namespace dlsweep::analysis {

/// A batch may take up to this many times the epochs of the group's smallest batch.
inline constexpr double kEpochBudgetFactor = 1.5;

struct GroupPoint {
  std::int64_t batch = 0;
  double steps = 0;    ///< mean steps to target of the batch size's best seed group
  double samples = 0;  ///< its mean samples to target
};

struct GroupFit {
  nlohmann::json value;                ///< the parameter's value (null: trials without it)
  std::string label;                   ///< the value as text ("lars", "(unset)")
  std::size_t trials = 0;              ///< trials with this value, any state
  std::size_t complete = 0;            ///< of which COMPLETE
  std::size_t batch_sizes = 0;         ///< distinct batch sizes among its COMPLETE single-batch trials
  std::vector<GroupPoint> points;      ///< batch sizes whose best reached the target, ascending
  std::optional<BatchFit> fit;         ///< nullopt: cannot be fitted (see cannot_fit)
  std::string cannot_fit;              ///< why not, in analysis/'s words (empty with a fit)
  /// The smallest batch that reached the target: the epoch budget's reference.
  std::optional<std::int64_t> reference_batch;
  /// The largest batch that reached the target in <= kEpochBudgetFactor x the reference's
  /// samples (epochs); the reference itself when no larger one did.
  std::optional<std::int64_t> largest_batch_within_budget;
  std::optional<double> largest_batch_epochs_ratio;  ///< its samples / the reference's
};

struct GroupedFit {
  std::string param;
  double epoch_factor = kEpochBudgetFactor;
  std::vector<GroupFit> groups;  ///< in the order each value first appears among the trials

  /// The text of `best --explain --group-by`: a heading, one line per group, then how the
  /// fitted groups compare with the first fitted one (ratio of B_crit, intervals overlapping).
  std::vector<std::string> lines() const;
};

/// Every parameter any trial of the study has, sorted.
std::vector<std::string> parameter_names(const StudyData& study);

/// Fits S(B) per value of `param`. Errors: the study has no such parameter (the error names
/// the study's parameters), or `param` is batch_size (the fit is over batch sizes).
Result<GroupedFit> fit_by_group(const StudyData& study, const std::string& param, const FitOptions& opt = {});

/// Parameters worth a grouped fit in the report without being asked: parameters whose values
/// are strings or booleans (optimizer, lr_rule, nesterov, ...), with 2 to 8 distinct values
/// among the COMPLETE trials; never batch_size or seed.
std::vector<std::string> categorical_parameters(const StudyData& study);

}  // namespace dlsweep::analysis
