// warm_start.hpp — `search.warm_start`: the COMPLETE trials of earlier studies seed the
// sampler's history (Optuna's add_trials semantics) without being run again.
//
// Two halves, both pure:
//  - read_warm_start: the key's shape, checked by the study validator with every other key
//    (a non-empty list of {study: NAME, db: PATH}, no duplicates, and an algorithm that
//    learns from its history: tpe or nsga2; random, qmc and grid are refused).
//  - place_warm_trials: an earlier study's spec and COMPLETE trials placed into this study's
//    space. The rules (README "Warm start"):
//      * objectives: the same list of (metric, mode), in order; the target too when an
//        objective or a constraint depends on it (*_to_target, reached_target). Else an error.
//      * parameters: every parameter the earlier study searched must be a parameter of this
//        study (searched or fixed); every parameter this study searches must have been
//        searched or fixed by the earlier study. Else an error naming the parameter.
//        Fixed values of the earlier study that this study does not have are ignored.
//      * values outside this study's space (out of a range, off an int step, not one of the
//        choices, a fixed value of this study that differs, a missing active parameter):
//        the trial is skipped and counted, by reason. A source none of whose trials can be
//        placed is an error.
//      * constraints: recomputed from the earlier trial's own figures with this study's
//        constraints (the same values as carrying them when the constraints are the same);
//        a constraint on a reported metric that no earlier trial reported is an error.
//    The first objective's value is the trial's best (as for this study's own trials).
// The I/O (opening the earlier database read-only, storing the placed trials) is
// engine/warm_start_load.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/multi_objective.hpp"
#include "search/history.hpp"
#include "study/reader.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// Reads `search.warm_start` (field `f`, present) into spec.search.warm_start.
void read_warm_start(StudyReader& r, const Field& f, StudySpec& spec);

/// The algorithm check, once the algorithm is known: `path` is the warm_start key's path.
void check_warm_start_algorithm(StudyReader& r, const std::string& path, const StudySpec& spec);

/// One COMPLETE trial of the earlier study as its database holds it.
struct EarlierTrial {
  std::int64_t number = 0;
  search::Params params = search::Params::object();
  std::optional<double> best_value;  ///< the first objective's best reported value
  std::optional<double> last_value;  ///< its last reported value (current attempt): rank_by final
  TrialFigures figures;              ///< its metrics and derived figures (for values, constraints)
};

/// One earlier trial placed into this study: what the sampler's history gets.
struct WarmTrial {
  std::int64_t source_number = 0;
  search::Params params = search::Params::object();  ///< this study's fixed merged in
  double value = 0;                   ///< the first objective
  std::vector<double> values;         ///< several objectives: each, in order
  std::vector<double> constraints;    ///< this study's constraints (<= 0 satisfied)
};

struct WarmPlacement {
  std::vector<WarmTrial> trials;
  std::int64_t skipped = 0;
  /// why trials were skipped -> how many, in the order first seen
  std::vector<std::pair<std::string, std::int64_t>> skip_reasons;
  /// "12 skipped: 8 lr 0.5 outside [0.0001, 0.1), 4 ..." ("" when none was skipped)
  std::string skip_note() const;
};

struct WarmProblem {
  std::string what, fix;
};

/// Places `trials` (the earlier study's COMPLETE ones) of `earlier` into `self`'s space (the
/// rules above). The problems say what is wrong of the source; the caller names it.
std::expected<WarmPlacement, std::vector<WarmProblem>> place_warm_trials(const StudySpec& self,
                                                                          const StudySpec& earlier,
                                                                          const std::vector<EarlierTrial>& trials);

/// The history record of a placed trial, numbered `number` (negative: warm-start trials
/// come before this study's trial 0 and never collide with its numbers).
search::TrialRecord warm_record(const WarmTrial& t, std::int64_t number);

}  // namespace dlsweep::orch
