// growth.hpp — which studies can grow, and by how much: `dlsweep resume STUDY
// --add-trials N` and `dlsweep enqueue`.
//
// The trial budget is the study's `search.trials`, stored in studies.spec_json; growing it
// rewrites that one key (the rest of the stored spec is kept byte for byte) and the caller
// records the new spec with an event in one transaction (Storage::update_study_spec). The
// budget is an absolute number, so a later plain `resume` — after a kill, say — neither
// loses the added trials nor adds them twice. Trials are numbered on from the highest one,
// and the engine creates trials while fewer than the budget exist: on a FINISHED study
// --add-trials N is exactly N new trials.
//
// random, qmc and tpe grow freely. A grid's budget is its points (or `search.trials` when
// that cut it short): --add-trials may take it up to the whole grid, never past it, and it
// takes no enqueued trials — each of its points is a trial already. Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

struct BudgetGrowth {
  std::int64_t old_budget = 0;  ///< trials the study had room for
  std::int64_t new_budget = 0;
  std::string spec_json;        ///< the stored spec with search.trials = new_budget
};

/// The study's trial budget: search.trials, capped by (or, when 0, equal to) a grid's size.
/// -1 when unbounded (cannot happen for a validated study).
std::int64_t trial_budget(const StudySpec& spec);

/// The same, given the size of the study's sampler (nullopt: unbounded); the one rule.
std::int64_t trial_budget(const StudySpec& spec, std::optional<std::int64_t> sampler_size);

/// --add-trials `n` on the study stored as `spec_json` (parsed: `spec`). Errors (bad
/// input): n < 1, a grid with no points left (or fewer than n), an overflow; each says
/// why and the fix. `study` names the study in messages.
Result<BudgetGrowth> grow_trial_budget(const StudySpec& spec, const std::string& spec_json, std::int64_t n,
                                       const std::string& study);

/// Whether the study takes enqueued trials (not a grid); the error says why and what to do.
Status enqueue_supported(const StudySpec& spec, const std::string& study);

}  // namespace dlsweep::orch
