// backend_options.hpp — every backend kind's own options, as a study holds them: one member
// per kind that takes keys of `backend:` (each read, validated and written back by its kind:
// BackendKind::read_options / write_options). What the registry builds a backend from.
#pragma once

#include "schedulers/slurm/options.hpp"

namespace dlsweep::sched {

/// Kind local's keys (backend_kinds.cpp reads them).
struct LocalStudyOptions {
  /// Python trials run by `python3 -m dlsweep_optuna` stay imported between trials
  /// (local/warm_pool.hpp).
  bool keep_imported = false;
};

struct BackendOptions {
  LocalStudyOptions local;  ///< kind local
  SlurmOptions slurm;       ///< kind slurm (schedulers/slurm/study_options.hpp); script_dir unset
};

}  // namespace dlsweep::sched
