// cmd_best_text.hpp — the words of plain `dlsweep best`: what the one ranking
// (analysis/ranking.hpp) decided, in three or four sentences (winner, how many reached the
// target, runner-up, left out), and the params as people read them. Decides nothing itself.
#pragma once

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

/// The sentences under "best schedule of S by C: trial N", most important first; empty when
/// the ranking has no winner.
std::vector<std::string> best_explanation(const analysis::StudyData& study, const analysis::Ranking& ranking);

}  // namespace dlsweep::orch
