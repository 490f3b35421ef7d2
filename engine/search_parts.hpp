// search_parts.hpp — what a study searches with, built once from its spec: the sampler, the
// pruner and the trial budget. The sweep runner builds them and hands them to the Engine;
// the dry run draws its trials from the same parts, so both see the same trials.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.hpp"
#include "search/pruner.hpp"
#include "search/sampler.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

struct SearchParts {
  std::unique_ptr<search::Sampler> sampler;
  std::unique_ptr<search::Pruner> pruner;
  /// Trials the study runs in all (study/growth.hpp trial_budget); -1: until the sampler
  /// is exhausted (cannot happen for a validated study).
  std::int64_t budget = -1;
  /// `search.warm_start`: earlier studies' COMPLETE trials (numbers < 0), put first in the
  /// sampler's history and never run (engine/warm_start_load.hpp).
  std::vector<search::TrialRecord> warm;
};

/// Builds the study's sampler and pruner (search::make_sampler / make_pruner) and its
/// budget. The study validator ran both factories already, so an error is a stored spec
/// that this version no longer accepts: it names the study file and the key.
Result<SearchParts> make_search_parts(const StudySpec& spec);

}  // namespace dlsweep::orch
