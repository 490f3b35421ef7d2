// spec.hpp — a study file (YAML or JSON, one schema) parsed and validated into a
// StudySpec. Validation is complete before anything touches the database: a study that
// fails validation leaves no trace.
//
// Every problem is reported (not just the first), each with the file, the key path in the
// form `space.base_lr.log_uniform[1]`, what is wrong and the fix. Unknown keys are errors
// with a did-you-mean suggestion.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/multi_objective.hpp"
#include "schedulers/backend_options.hpp"
#include "search/pruner.hpp"
#include "search/sampler.hpp"
#include "search/search_space.hpp"

namespace dlsweep::orch {

struct ValidationError {
  std::string file;      ///< the study file as given
  std::string key_path;  ///< e.g. "space.base_lr.log_uniform[1]"; "" for the whole file
  std::string what;
  std::string fix;
  int line = 0;          ///< 1-based line in the file when known (YAML), else 0
  /// "file: key_path: what (fix: ...)"; "file:line: key_path: ..." when the line is known.
  std::string message() const;
};

/// trial.fail_fast when the study does not say.
inline constexpr int kDefaultFailFast = 3;
/// backend.pending_warn (seconds) when the study does not say.
inline constexpr double kDefaultPendingWarn = 600;

struct StudySpec {
  std::string name;
  std::string description;
  std::string source;                       ///< the file it came from
  /// The folder of `source`, made absolute once when the study is read: what relative paths
  /// in the study (backend.template) and the {study_dir} placeholder mean, everywhere.
  std::filesystem::path study_dir;

  struct BackendSpec {
    std::string kind = "local";             ///< "local" | "slurm"
    int max_concurrent = 1;
    /// A trial waiting in the scheduler's queue this long (seconds; not counting the time
    /// it waits for the study's own max_concurrent) gets one warning line naming the
    /// scheduler's reason; 0: never.
    double pending_warn_s = kDefaultPendingWarn;
    sched::BackendOptions options;          ///< each kind's own keys (kind slurm: the site settings)
  } backend;

  struct TrialSpec {
    bool embedded = true;                   ///< true: dlsweep-train; false: `command`
    std::vector<std::string> command;       ///< argv of a protocol-speaking program
    int ranks = 1;                          ///< per trial, unless a `ranks` parameter sets it
    std::string launcher;                   ///< "" (dlsweep's MPI launch) | mpirun | srun | torchrun
    double timeout_s = 0;                   ///< 0 = no limit
    int max_retries = 0;
    /// Stop launching when this many trials failed the same way (exit code and last stderr
    /// line) before any trial completed; 0: never.
    int fail_fast = kDefaultFailFast;
    /// Study parameters the program may leave unread (`trial.unread_params`); any other that a
    /// completed trial of a program using dlsweep_trial never read stops the sweep.
    std::vector<std::string> unread_params;
    std::map<std::string, std::string> env;
  } trial;

  struct Objective {
    std::string metric = "val_acc";
    std::string mode = "max";               ///< "min" | "max"
    std::optional<double> target;           ///< for steps/time-to-target
    bool stop_at_target = false;            ///< ask a trial to stop once it reaches the target
    /// `rank_by`: "best" (default) ranks a trial by its best report of the metric, "final"
    /// by its last (Optuna's value). common/objective.hpp.
    std::string rank_by = "best";
    bool rank_final() const { return rank_by == "final"; }
  } objective;                              ///< the first (or only) objective: the curve dlsweep follows
  /// Every objective, in file order (objectives[0] == objective); one entry for a study
  /// with one objective. Several: `best` names the Pareto front.
  std::vector<Objective> objectives;
  /// `constraints`: feasible trials rank before infeasible ones (common/multi_objective.hpp).
  std::vector<ConstraintDef> constraints;

  bool multi_objective() const { return objectives.size() > 1; }
  /// The objectives as plain data (metric, maximise).
  std::vector<ObjectiveDef> objective_defs() const;

  struct SearchSpec {
    std::string algorithm = "grid";         ///< a name of search::make_sampler's registry
    std::int64_t trials = 0;                ///< grid: 0 = the whole grid; random/qmc/tpe: required > 0
    std::uint64_t seed = 0;
    /// The algorithm's own keys of `search:` (e.g. tpe's gamma), validated by make_sampler.
    nlohmann::json options = nlohmann::json::object();
    /// `warm_start`: earlier studies whose COMPLETE trials seed the sampler's history (tpe,
    /// nsga2; study/warm_start.hpp). `db` as written; relative to study_dir.
    struct WarmStart {
      std::string study;
      std::string db;
      /// Where the entry sits in the study file, for the errors found when its database is
      /// read at submit (1-based; 0 unknown: JSON files, specs read back from a database).
      /// Not part of to_json().
      int line = 0;        ///< the entry (`- {study: ..., db: ...}`)
      int study_line = 0;  ///< its `study:` key
      int db_line = 0;     ///< its `db:` key
    };
    std::vector<WarmStart> warm_start;
  } search;

  /// `pruner`: stop trials that fall behind (search/pruner.hpp). by, group_by, warmup and
  /// startup_trials are read here for every kind; `options` holds every key but `kind`,
  /// normalised (by, warmup and group_by always present), and is what make_pruner gets.
  struct PrunerSpec {
    std::string kind = "none";              ///< a name of search::make_pruner's registry
    std::string by = "epoch";               ///< "epoch" | "step" | "samples" | "wall_s"
    std::vector<std::string> group_by;      ///< param names: compare only with trials that share them
    std::int64_t startup_trials = 5;        ///< median/percentile: completed trials needed before pruning
    double warmup = 1;                      ///< no pruning before this point on the axis
    nlohmann::json options = nlohmann::json::object();
  } pruner;

  /// dims = `space`; fixed = `trial.trainer` settings merged with `fixed` (trainer studies).
  search::Space space;

  std::string runs_dir;                     ///< where trial dirs go; default "dlsweep-runs"

  /// The `backend` section in normalised form (part of to_json()).
  nlohmann::json backend_json() const;
  /// Normalised form, stored in the database (studies.spec_json), in the study-file schema:
  /// parse_study(to_json().dump(), StudyFormat::json, f) gives an equal spec. `space` is
  /// written as a list of one-key maps ([{"batch_size": {"choice": [...]}}, ...]) because
  /// nlohmann::json sorts object keys and dims must keep their order; trainer settings are
  /// written merged into `fixed` with `trial.trainer: {}`; unset optionals are left out.
  nlohmann::json to_json() const;
};

enum class StudyFormat { yaml, json };

using StudyResult = std::expected<StudySpec, std::vector<ValidationError>>;

/// Reads and validates a file; the format comes from the extension (.yaml/.yml/.json).
StudyResult load_study(const std::filesystem::path& file);
/// Validates text already in memory; `file` is used in messages only.
StudyResult parse_study(const std::string& text, StudyFormat format, const std::string& file);

}  // namespace dlsweep::orch
