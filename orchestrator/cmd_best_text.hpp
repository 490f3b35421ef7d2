// cmd_best_text.hpp — the words of plain `dlsweep best`: what the one ranking
// (analysis/ranking.hpp) decided, in three or four sentences (winner, how many reached the
// target, runner-up, left out), and the params as people read them. Decides nothing itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/ranking.hpp"
#include "analysis/study_data.hpp"

namespace dlsweep::orch {

/// Params as text for people: "base_lr=0.02104, batch_size=256" — numbers to 4 significant
/// digits (JSON output keeps them whole); `only`: just the keys it holds.
std::string params_brief(const nlohmann::json& params, const nlohmann::json* only = nullptr);

/// "left out: 3 FAILED, 2 PRUNED (only COMPLETE trials can win)"; empty when none was.
std::string left_out_text(const analysis::Ranking& ranking);

/// The objectives and constraints on a reported metric (not a derived figure) that no
/// COMPLETE trial ever reported — a typo, or a metric the program does not log — named with
/// what the trials did report: "gpu_mem (constraint) was never reported by a COMPLETE trial
/// (they reported: val_acc, val_loss)". Empty when there is none, or no COMPLETE trial.
std::string never_reported_text(const analysis::StudyData& study);

/// "ranked by final report (objective.rank_by: final)" or "ranked by best report
/// (objective.rank_by: best, the default; `rank_by: final` ranks by the last report, as Optuna)".
std::string ranked_by_text(bool final);

/// Whether `best` speaks of a schedule: the study trains dlsweep's trainer or searches a
/// batch size. A plain hyperparameter search (a user program without one) is told "best
/// trial", and a winner that recorded no checkpoint is not said to have lost its model.
bool schedule_study(const analysis::StudyData& study);

/// A checkpoint record of the winner's current attempt (records kind checkpoint), in order.
struct CheckpointRecord {
  std::int64_t step = 0;
  double epoch = 0;
  std::string path;  ///< the record's text (may be empty)
};

/// Which checkpoint holds the model that won. rank_by final: the trial's last checkpoint.
/// best: the checkpoint written at the best report's step when one was and no later record
/// names the same file (else it was overwritten: the last checkpoint is not the best
/// report's model). Empty when the trial has no curve to tell.
std::string winner_model_text(const analysis::TrialData& t, bool final, const std::vector<CheckpointRecord>& checkpoints);

/// The sentences under "best schedule of S by C: trial N", most important first; empty when
/// the ranking has no winner.
std::vector<std::string> best_explanation(const analysis::StudyData& study, const analysis::Ranking& ranking);

}  // namespace dlsweep::orch
