// conditional.hpp — conditional parameters (`when:` on a space entry).
//
// A dimension with conditions exists in a trial only when every condition's parameter is
// present in that trial and has one of the listed values; otherwise it is absent from the
// params (and from params.json). Parents are decided before children: samplers walk the
// dimensions in sampling_order(), a topological order that keeps study-file order where
// it can. check_conditions() is what the study validator calls: unknown parameters,
// values a parent can never take, a dimension conditioned on itself, and cycles.
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <vector>

#include "search/options.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

/// True when every condition of `d` holds on `params` (the values decided so far).
bool is_active(const Dimension& d, const Params& params);

/// Indices into space.dims, parents before children, otherwise in file order. Requires
/// check_conditions(space) to be empty (on a cycle the remaining dims follow in file order).
std::vector<std::size_t> sampling_order(const Space& space);

/// Removes from `params` every dimension that is not active given the others, in
/// sampling order (so a child of an absent parent is absent too).
void drop_inactive(const Space& space, Params& params);

/// Problems with the `when:` of the space's dimensions; OptionError::key is
/// "<dim>.when.<param>" (or "<dim>.when" for a cycle).
std::vector<OptionError> check_conditions(const Space& space);

/// True when some dimension has conditions.
bool has_conditions(const Space& space);

}  // namespace dlsweep::search
