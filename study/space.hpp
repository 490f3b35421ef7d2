// space.hpp — validation of what a study varies and holds fixed: `trial.trainer`,
// `fixed` and `space`, producing the search::Space the samplers get.
//
// For embedded-trainer studies every name must be a dlsweep-train parameter and every
// value (fixed values, choices, both bounds of a range) must pass
// trainer::check_param_value, so a trial can never fail on a parameter the study gave it.
// For command studies names must be identifiers and values are passed on untouched.
// Invariants of the returned Space when the reader recorded no error: the Dimension
// invariants of search_space.hpp hold, dims are in file order, no name appears twice
// across dims and fixed.
#pragma once

#include <string>
#include <vector>

#include "study/reader.hpp"
#include "search/search_space.hpp"

namespace dlsweep::orch {

struct SpaceResult {
  search::Space space;
  std::vector<std::string> dim_paths;  ///< key path of each dim, parallel to space.dims
};

/// Reads `trainer` (trial.trainer; absent Field for command studies), `fixed` and `space`.
/// Problems go to `r`; the result holds whatever was valid.
SpaceResult read_space(StudyReader& r, const Field& trainer, const Field& fixed, const Field& space,
                       bool embedded);

/// The study-file form of one dimension: [..] → {"choice": [..]}, {"uniform": [lo, hi]},
/// {"log_uniform": [lo, hi]}, {"int": [lo, hi], "step": s, "log": true} (defaults omitted).
nlohmann::json dimension_to_json(const search::Dimension& d);

}  // namespace dlsweep::orch
