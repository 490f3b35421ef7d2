// pareto.hpp — the Pareto arithmetic (common/pareto.hpp) as the samplers use it, and a
// trial's loss vector under the History's directions.
#pragma once

#include <optional>

#include "common/pareto.hpp"
#include "search/history.hpp"

namespace dlsweep::search {

using dlsweep::Losses;
using dlsweep::dominates;
using dlsweep::total_violation;
using dlsweep::constrained_dominates;
using dlsweep::non_dominated_sort;
using dlsweep::crowding_distance;
using dlsweep::hypervolume;
using dlsweep::select_by_hypervolume;

/// A trial's loss vector under the history's directions: several objectives — its values,
/// maximised ones negated; one objective — {value} (negated when maximised). nullopt when it
/// has none (or a non-finite one, or the wrong count).
std::optional<Losses> to_losses(const TrialRecord& t, const History& h);

}  // namespace dlsweep::search
