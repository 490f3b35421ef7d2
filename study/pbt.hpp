// pbt.hpp — what a population-based training study (`search: {algorithm: pbt}`) needs of the
// rest of the study file, beyond the options the sampler checks (search/pbt_sampler.hpp):
// one objective, no pruner (PBT decides at interval ends itself: a pruner would end members
// mid-interval and break the population), and for dlsweep-train: `interval.by: epoch`,
// `epochs` fixed, only batch_size and base_lr perturbed (the schedules dlsweep-train replays:
// batch_ramp, lr_schedule), none of batch_ramp/lr_schedule/stop_epoch set by the study.
//
// It also completes `search.generations` when the file leaves it out: dlsweep-train,
// ceil(epochs / interval.every); a user program, search.trials / population. `trials`,
// when given, must be population x generations (the budget). Pure: no I/O.
#pragma once

#include <vector>

#include "search/options.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// The problems of a pbt study (OptionError::key is the key path in the file, e.g.
/// "search.interval.by", "pruner.kind"); completes spec.search.options["generations"].
/// Does nothing for another algorithm.
std::vector<search::OptionError> complete_pbt(StudySpec& spec);

/// dlsweep-train's epochs: the study's (trial.trainer / fixed), else the trainer's default.
/// Also the trunk's end of a branching study (study/branch.hpp).
double trainer_epochs(const StudySpec& spec);

}  // namespace dlsweep::orch
