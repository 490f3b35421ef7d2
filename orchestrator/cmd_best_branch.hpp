// cmd_best_branch.hpp — `dlsweep best` of a branching study (search: {algorithm: branch},
// common/branch_cbs.hpp): the critical-batch curve, one line per point (the point on the
// axis, the trunk's samples there, the critical batch or its interval, the seeds), the
// batch_ramp schedule that follows it with each stage's LR under the study's lr_rule and the
// samples and steps of the trunk's run it covers, and B_simple (grad_noise_scale) from the
// trunk at each point where it was measured. `--explain` adds the per-batch evidence; `--format
// json` returns it all as one object; `--write-schedule FILE` writes a study that runs the
// schedule as one fixed dlsweep-train trial (refused for a user program: the stages are
// printed for it to use).
//
// Every trial's role is its `pbt` event's link (common/pbt_link.hpp, `branch`). A branch's
// value is its objective's last report that counts (branch_report_counts: at its link's end,
// or the fraction of a step short of it where the trainer stops); one that never got there
// has none. A trunk segment's last report that counts gives the samples at its end. Reading (load_branch) is apart from the answer (branch_answer, pure) and its
// forms (text, JSON, the schedule study), so tests check each on a hand-made study.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/study_data.hpp"
#include "common/branch_cbs.hpp"
#include "common/pbt_link.hpp"
#include "common/result.hpp"
#include "common/stored_study.hpp"
#include "db/storage.hpp"
#include "orchestrator/commands.hpp"

namespace dlsweep::orch {

/// A branching study as stored: its spec (study-file JSON), its plan and every trial's link.
struct BranchStudy {
  std::string name;
  nlohmann::json spec;         ///< studies.spec_json
  std::string source_path;     ///< the study file it came from
  StoredBranch plan;
  bool trainer = false;        ///< trial.trainer: dlsweep-train runs the trials
  PbtLinks links;              ///< by trial number (only links with a `branch` role)
};

/// The study's branch view; nullopt when it is not a branching study.
Result<std::optional<BranchStudy>> load_branch(const db::Storage& storage, const db::StudyRow& study);

/// One stage of the derived schedule, with what it trains at and covers of the trunk's run.
struct BranchStage {
  RampStage stage;
  std::optional<double> end;            ///< the next stage's start, else the trunk's end (when known)
  std::optional<double> lr;             ///< base_lr under lr_rule (dlsweep-train studies)
  std::optional<std::int64_t> samples;  ///< samples of the trunk's run in [stage.at, end)
  std::optional<std::int64_t> steps;    ///< samples / batch, rounded up
};

/// The answer of a branching study.
struct BranchAnswer {
  std::string axis = "epoch";
  std::vector<PointAnswer> points;                 ///< one per point, in order
  std::vector<std::optional<std::int64_t>> samples;  ///< the trunk's samples at each point
  std::vector<std::optional<double>> b_simple;     ///< the trunk's grad_noise_scale at each point
  std::vector<BranchStage> stages;                 ///< the schedule (branch_schedule)
  std::string batch_ramp;                          ///< ramp_text of the stages, on the axis
  std::string lr_rule;                             ///< the study's (dlsweep-train), else ""
  std::optional<double> base_lr;
  std::optional<std::int64_t> base_batch;
  std::optional<double> epochs_per_sample;         ///< from the trunk's records (samples -> epochs)
  std::int64_t finished = 0;                       ///< branches with a value
};

/// The answer from the study and its trials' curves (analysis::load_study). Pure.
BranchAnswer branch_answer(const BranchStudy& branch, const analysis::StudyData& study);

/// `best`'s text (with the evidence when `explain`), lines ending in '\n'.
std::string branch_text(const BranchStudy& branch, const analysis::StudyData& study, const BranchAnswer& a, bool explain);

/// `best --format json`.
nlohmann::json branch_json(const BranchStudy& branch, const analysis::StudyData& study, const BranchAnswer& a,
                           bool explain);

/// The study file that runs the schedule as one fixed dlsweep-train trial ("<study>-schedule");
/// an error saying why for a user program's study (with the stages to use) or a schedule on
/// samples the trunk's records cannot turn into epochs.
Result<nlohmann::json> branch_schedule_study(const BranchStudy& branch, const BranchAnswer& a);

/// `best` of a branching study (and `--write-schedule`); the exit code.
int cmd_best_branch(const BestArgs& a, const BranchStudy& branch, const analysis::StudyData& study);

}  // namespace dlsweep::orch
