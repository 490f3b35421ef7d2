// replay_sampler.hpp — a sampler replayed over a finished study whose trials cover a grid
// (`dlsweep replay --algorithm`): the sampler (made by make_sampler, the engine's own)
// proposes points; each is looked up among the recorded trials (a proposal off the grid
// maps to the nearest grid point, and says so) and that trial's recorded curve is replayed
// under the pruner (replay.hpp). When would the sweep have found its best?
//
// Pure: the recorded trials, the space, a Sampler and a Pruner in; the proposals and the
// outcome out.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <vector>

#include "search/replay.hpp"
#include "search/sampler.hpp"
#include "search/search_space.hpp"

namespace dlsweep::search {

struct Proposal {
  std::int64_t index = 0;    ///< 0-based: the replayed sweep's trial number
  Params proposed;           ///< what the sampler asked for (its searched dimensions)
  std::int64_t trial = 0;    ///< the recorded trial it maps to
  bool exact = true;         ///< false: off the grid, mapped to the nearest grid point
  bool repeat = false;       ///< the same grid point as an earlier proposal (trained again)
};

struct SamplerReplay {
  std::string sampler;
  std::vector<Proposal> proposals;
  ReplayOutcome outcome;     ///< over the proposals (compute_recorded: the whole recorded sweep's)
  std::size_t off_grid = 0, repeats = 0;
  /// The recorded sweep's best COMPLETE trial, and the proposal that first reached it (none: never).
  std::optional<std::int64_t> recorded_best;
  std::optional<double> recorded_best_value;
  std::optional<std::int64_t> found_at;
  double compute_to_found = 0;  ///< the replay's compute up to the end of that proposal
};

/// Ok when every point of `space`'s grid has a recorded trial (any finished state); else why
/// not, as a sentence ("x is continuous", "3 of 12 grid points have no trial, e.g. {...}").
std::expected<void, std::string> covers_grid(const std::vector<RecordedTrial>& trials, const Space& space);

/// The recorded trial whose params are `p` on the space's dimensions, else the nearest one
/// (per dimension: numbers by their distance over the recorded range, log where the space
/// says so; anything else equal or not); exact says which. `trials` is not empty.
std::pair<std::size_t, bool> nearest_trial(const std::vector<RecordedTrial>& trials, const Space& space, const Params& p);

/// Replays `trials` proposals of `sampler` over the recorded trials (`in.trials`, covering
/// the grid) under `pruner`.
SamplerReplay replay_sampler(const ReplayInput& in, const Space& space, Sampler& sampler, const Pruner& pruner,
                             std::int64_t trials);

/// "tpe: the best (trial 7, loss 0.31) found at proposal 5 of 12, after 38% of the recorded compute; ...".
std::string sampler_summary_line(const SamplerReplay& r, const std::string& metric);

}  // namespace dlsweep::search
