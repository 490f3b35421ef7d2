// trial_curve.hpp — what the engine keeps of one attempt's reports: the objective's curve
// on every axis (step, epoch, samples, wall_s) for the pruners, its last and best value, and which metrics the trial reported in
// its eval/final records (a clean exit without the objective is a failure).
//
// Pure: the engine parses metrics.jsonl and folds each record in here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/multi_objective.hpp"
#include "common/objective.hpp"
#include "common/protocol.hpp"
#include "search/history.hpp"

namespace dlsweep::orch {

/// Which metric is the objective and which way is better.
struct CurveAxis {
  std::string metric;
  bool maximize = true;
  std::optional<double> target;  ///< the objective's target: where *_to_target are read
};


struct TrialCurve {
  std::vector<search::CurvePoint> points;  ///< eval/final records with the objective, on every axis (search::History)
  std::optional<double> last_value, best_value;
  std::set<std::string> reported;  ///< metric names of the attempt's eval/final records
  std::size_t evals = 0;           ///< eval/final records folded in
  /// seq -> hash of its line, of every record read for the attempt (the engine skips a
  /// later record that reuses a seq: the database keeps the first).
  std::map<std::int64_t, std::size_t> seqs;
  /// Lines skipped as bad since the last record read: a jump in seq over them is no loss.
  std::int64_t bad_lines = 0;
  /// The latest eval/final record naming the objective gave NaN/inf (null in the file):
  /// a trial that ends so diverged.
  bool last_nonfinite = false;
  /// Every metric of the eval/final records and the derived figures (time, steps, samples
  /// to target; wall time): what the objective vector and constraint values of several
  /// objectives are computed from (common/multi_objective.hpp). ranks is the caller's.
  TrialFigures figures;

  /// Folds one record in; true when it was an eval record carrying the objective (what may
  /// change a pruner's verdict). NaN values are not points.
  bool add(const protocol::Record& r, const CurveAxis& axis);
};

}  // namespace dlsweep::orch
