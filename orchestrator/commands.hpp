// commands.hpp — the dlsweep verbs. Each returns the process exit code (see exit_codes).
#pragma once

#include <string>
#include <vector>

namespace dlsweep::orch {

/// Documented exit codes of `dlsweep` (README, "Exit codes").
namespace exit_code {
inline constexpr int ok = 0;           ///< success
inline constexpr int runtime = 1;      ///< database, disk or backend failure
inline constexpr int usage = 2;        ///< bad arguments, invalid study, unknown study
inline constexpr int trials_failed = 3;///< submit: the sweep ran, but no trial completed
inline constexpr int internal = 70;    ///< a bug: please report it
inline constexpr int detached = 75;    ///< --detach-on-term + SIGTERM: trials run on; `resume` follows them
inline constexpr int interrupted = 130;///< Ctrl-C / SIGTERM: live trials cancelled and recorded
}  // namespace exit_code

struct SubmitArgs {
  std::string db;
  std::string study_file;
  bool dry_run = false;  ///< write what would be launched, submit nothing
  bool as_job = false;   ///< run the orchestrator itself as a Slurm job
  bool detach_on_term = false;  ///< SIGTERM leaves Slurm jobs running (EngineOptions)
};
int cmd_submit(const SubmitArgs& a);

struct StatusArgs {
  std::string db;
  std::string study;  ///< empty: every study
  std::string format = "table";
};
int cmd_status(const StatusArgs& a);

struct ResultsArgs {
  std::string db;
  std::string study;
  std::string format = "table";
};
int cmd_results(const ResultsArgs& a);

struct QueryArgs {
  std::string db;
  std::string sql;
  std::string format = "table";
};
int cmd_query(const QueryArgs& a);

struct BestArgs {
  std::string db;
  std::string study;
  std::string by = "auto";
  std::string format = "table";  ///< table: sentences; json: an object
};
int cmd_best(const BestArgs& a);

struct ResumeArgs {
  std::string db;
  std::string study;
  bool detach_on_term = false;  ///< SIGTERM leaves Slurm jobs running (EngineOptions)
};
int cmd_resume(const ResumeArgs& a);

struct CancelArgs {
  std::string db;
  std::string study;
  std::vector<long long> trials;  ///< empty: the whole study
};
int cmd_cancel(const CancelArgs& a);

/// Where `dlsweep-train` is: $DLSWEEP_TRAIN, else beside this executable, else on PATH.
std::string locate_train_binary();

}  // namespace dlsweep::orch
