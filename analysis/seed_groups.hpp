// seed_groups.hpp — trials that differ only in `seed` are one configuration measured
// several times. Wherever dlsweep compares configurations it compares their seed groups
// (mean, std, n), so that a lucky seed does not beat a better mean (docs/math.md#seeds).
//
// A group's statistics are over its members that reached the target; `all_reached` says
// whether every member did. A group is ranked by time/steps only when all its members
// reached the target (a configuration that fails on some seeds is not "faster").
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/stats.hpp"
#include "analysis/study_data.hpp"

namespace dlsweep::analysis {

struct SeedGroup {
  nlohmann::json config;              ///< params without seed
  std::int64_t batch = 0;
  std::vector<std::size_t> members;   ///< indices into the trials given
  std::size_t reached = 0;            ///< members that reached the target
  bool all_reached = false;
  Stat steps, samples, time;          ///< to target, over reaching members
  Stat best_value;                    ///< best objective value, over members that have one
};

/// Groups the trials at `indices` (of `trials`) by config_key(); groups come out in the order
/// of their first member.
std::vector<SeedGroup> group_by_seed(const std::vector<TrialData>& trials, const std::vector<std::size_t>& indices);

/// Pooled within-group standard deviation of log(time to target) over groups with >= 2
/// reaching members (sum of squared deviations / sum of (n - 1)); nullopt when no group has
/// replicates — seed noise is then unknown.
std::optional<double> pooled_log_time_sd(const std::vector<SeedGroup>& groups, const std::vector<TrialData>& trials);

/// True if group `b`'s mean time is within seed noise of group `a`'s:
/// |log(mean_b / mean_a)| <= 2 * sd * sqrt(1/n_a + 1/n_b).
bool within_noise(const SeedGroup& a, const SeedGroup& b, double log_sd);

}  // namespace dlsweep::analysis
