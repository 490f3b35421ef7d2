// value_map.hpp — from a point of the unit interval to a dimension's value, shared by the
// samplers that draw in [0, 1) (qmc, tpe's startup) so ints and categoricals map alike.
//
// choice: index floor(u·k); uniform: low + u·(high − low); log_uniform: log-uniform;
// int_range: floor(u·n)-th value, or for log ranges the log-width cell containing
// exp(log a + u·(log b − log a)), as random_sampler.cpp does. Results are inside the
// dimension's bounds for every u (continuous values clamped into [low, high)).
#pragma once

#include <nlohmann/json.hpp>

#include "search/search_space.hpp"

namespace dlsweep::search {

nlohmann::json value_from_unit(const Dimension& d, double u);

}  // namespace dlsweep::search
