// cancel_targets.hpp — which trials `dlsweep cancel STUDY --trial N...` may cancel.
//
// Only trials that exist can be cancelled: a number not sampled yet (or never to be) is
// an error naming it, never a silent "cancelled" that the engine then ignores. Trials
// already finished are left alone with a note. Pure: works on the trial rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::orch {

struct CancelPlan {
  std::vector<std::int64_t> numbers;  ///< unfinished trials to cancel (all of them when none was named)
  std::vector<std::string> notes;     ///< "trial 3 is already COMPLETE: left as it is"
};

/// `named` empty: every unfinished trial. Error when a named number is no trial of the study.
Result<CancelPlan> plan_cancel(const std::vector<db::TrialRow>& trials, const std::vector<long long>& named,
                               const std::string& study);

}  // namespace dlsweep::orch
