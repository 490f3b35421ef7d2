// commands.hpp — the dlsweep verbs. Each returns the process exit code (see exit_codes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/exit_codes.hpp"

namespace dlsweep::orch {

/// Documented exit codes of `dlsweep` (README, "Exit codes"): common/exit_codes.hpp.
namespace exit_code = ::dlsweep::exit_codes::cli;

struct SubmitArgs {
  std::string db;
  std::string study_file;
  bool dry_run = false;  ///< write what would be launched, submit nothing
  bool as_job = false;   ///< run the orchestrator itself as a Slurm job
  bool detach_on_term = false;  ///< SIGTERM leaves Slurm jobs running (EngineOptions)
  bool replace = false;  ///< delete a study of the same name (rows and directory) first, as `delete --files`
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
  bool explain = false;          ///< the evidence: regime, B_crit, runner-ups, speedups, exclusions
  std::string group_by;          ///< --group-by PARAM: S(B) and B_crit per value of PARAM (implies explain)
  std::string write_schedule;    ///< pbt: write the winner's schedule as a replay study file here
};
int cmd_best(const BestArgs& a);
/// `best --explain` (cmd_best.cpp).
int cmd_best_explain(const BestArgs& a);

struct PlanArgs {
  std::string db;
  std::string study;
  std::vector<int> ranks{1, 2, 8, 64};
  std::string format = "table";  ///< table | json
};
/// Predicted best batch and time to target per rank count (model prediction; cmd_plan.cpp).
int cmd_plan(const PlanArgs& a);

struct ResumeArgs {
  std::string db;
  std::string study;
  bool detach_on_term = false;  ///< SIGTERM leaves Slurm jobs running (EngineOptions)
  std::string rerun;            ///< "cancelled,failed": re-run the trials in these states (new attempt)
  bool add_trials_given = false;  ///< --add-trials was on the command line
  std::int64_t add_trials = 0;    ///< grow the study's trial budget by this many (study/growth.hpp)
  std::string relocate;           ///< "OLD=NEW": re-root the study's stored paths (orchestrator/relocation.hpp)
  bool as_job = false;            ///< the resumed orchestrator runs as a Slurm job (as_job.hpp)
};
int cmd_resume(const ResumeArgs& a);

struct EnqueueArgs {
  std::string db;
  std::string study;
  std::vector<std::string> sets;  ///< "NAME=VALUE", one per --set
};
/// Asks for a trial with fixed values (Optuna's enqueue_trial; cmd_enqueue.cpp).
int cmd_enqueue(const EnqueueArgs& a);

struct WorkerArgs {
  std::string pool, id;
  int ranks = 0;            ///< 0: $SLURM_NTASKS, else 1
  int time_limit_min = 0;
  double margin_s = 30;
  double idle_s = 120;
};
/// A pilot worker's loop (schedulers/slurm/pool_worker.hpp).
int cmd_worker(const WorkerArgs& a);

struct CancelArgs {
  std::string db;
  std::string study;
  std::vector<long long> trials;  ///< empty: the whole study
};
int cmd_cancel(const CancelArgs& a);

struct DeleteArgs {
  std::string db;
  std::string study;
  bool files = false;  ///< also remove <runs_dir>/<study> (when provably the study's)
  bool yes = false;    ///< do not ask (needed when stdin is not a terminal)
};
/// Removes a study's rows (one transaction) and, with files, its directory (cmd_delete.cpp).
int cmd_delete(const DeleteArgs& a);

struct ExportArgs {
  std::string db;
  std::string study;
  std::string format = "csv";  ///< csv; parquet is refused with the reason (no Debian library)
  bool curves = false;         ///< long-form curves instead of one row per trial
  std::string output;          ///< file to write (atomically); empty or "-": stdout
};
int cmd_export(const ExportArgs& a);
struct ReportArgs {
  std::string db;
  std::string study;
  std::string output;  ///< empty: STUDY-report.html; "-": stdout
};
int cmd_report(const ReportArgs& a);

struct ServeArgs {
  std::string db;
  std::string bind = "127.0.0.1";
  unsigned short port = 8080;
  int max_connections = 256;  ///< more get 503
  bool verbose = false;       ///< one stderr line per response
  std::string token_file;     ///< "" draws a random token
  bool no_token = false;      ///< serve without a token (warns)
  std::string unix_socket;    ///< "" serves TCP on bind:port
};
int cmd_serve(const ServeArgs& a);

struct ReplayArgs {
  std::string db;
  std::string study;
  std::string pruner;                       ///< a kind of search::make_pruner, or "recorded" (the study's own)
  std::vector<std::string> pruner_options;  ///< "KEY=VALUE", one per --pruner-option
  std::string algorithm;                    ///< a sampler to replay over a grid study ("": none)
  std::vector<std::string> algorithm_options;  ///< "KEY=VALUE", one per --algorithm-option
  std::optional<std::uint64_t> seed;        ///< --seed: the sampler's seed (default: the study's)
  std::int64_t trials = 0;                  ///< --trials: proposals (0: as many as the study's finished trials)
  std::string compute = "auto";             ///< auto | wall_s | samples | step | epoch
  std::string format = "table";             ///< table (sentences and a table) | json
};
/// A finished study's curves replayed under another pruner, nothing trained (cmd_replay.cpp).
int cmd_replay(const ReplayArgs& a);


}  // namespace dlsweep::orch
