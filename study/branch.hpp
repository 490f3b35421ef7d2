// branch.hpp — what a branching study (`search: {algorithm: branch}`: the critical batch
// measured by branching from the trunk's checkpoints, search/branch_sampler.hpp) needs of the
// rest of the study file, beyond the options the sampler checks: one objective, no pruner (a
// pruned branch would leave its batch unmeasured), no `trials` (the plan fixes them), and for
// dlsweep-train: `by: epoch`, the trunk's end = the trainer's epochs, no batch_ramp,
// lr_schedule, stop_epoch, branch_seed or batch_size of the study's own (the branches set them),
// every batch within the training set (train_subset).
//
// It also completes the stored options: `points` as the list {first, last} stands for,
// `end` (dlsweep-train: its epochs) and `generations` (the trunk's segments, points + 1), so
// every reader of the stored study sees one form. Pure: no I/O.
#pragma once

#include <vector>

#include "search/options.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// The problems of a branching study (OptionError::key: the key path in the file); completes
/// spec.search.options. Does nothing for another algorithm.
std::vector<search::OptionError> complete_branch(StudySpec& spec);

}  // namespace dlsweep::orch
