// enqueued_params.hpp — the params of a trial asked for with fixed values (`dlsweep
// enqueue`, Optuna's enqueue_trial): the fixed values win, the rest is what the study's
// sampler proposed for that trial.
//
// Conditional dimensions stay consistent: walking the dimensions parents first
// (sampling_order), a dimension the fixed values switch off is dropped, and one they
// switch on that the sampler did not draw (its parent had another value there) is drawn as
// the random sampler draws it for (seed, number). Pure: same inputs, same params — so
// `resume` after a crash re-creates an enqueued trial exactly.
#pragma once

#include <cstdint>
#include <optional>

#include "search/search_space.hpp"

namespace dlsweep::search {

/// `sampled`: the sampler's params for trial `number` (nullopt: it proposed none; then the
/// space's fixed params and random draws fill in). `fixed`: name -> value, names of
/// space.dims whose values the caller has checked against the space.
Params merge_enqueued(const Space& space, std::uint64_t seed, std::int64_t number, const std::optional<Params>& sampled,
                      const Params& fixed);

}  // namespace dlsweep::search
