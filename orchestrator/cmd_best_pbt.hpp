// cmd_best_pbt.hpp — `dlsweep best` of a population-based training study: the winner is the
// best trial of the last generation (analysis::rank over that generation, by value unless
// --by says otherwise), and what `best` reports is its schedule — the hyperparameters of each
// interval along its lineage, with the member each came from (engine/pbt_lineage.hpp).
// `best --write-schedule FILE` writes a study file that replays the schedule as one fixed
// trial: dlsweep-train gets the winner's params with its batch_ramp/lr_schedule strings (no
// stop_epoch); a user program gets `schedule`, a JSON string of [{"<axis>": start, "params":
// {...}}, ...]. `status` shows each trial's link (pbt_status_cells).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "analysis/study_data.hpp"
#include "db/storage.hpp"
#include "engine/pbt_lineage.hpp"
#include "orchestrator/commands.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// A PBT study as stored: its spec and every trial's link.
struct PbtStudy {
  StudySpec spec;
  PbtLinks links;
  std::int64_t generations = 0;
};

/// Every trial's link as the engine recorded it (`pbt` events; a later link of a trial
/// replaces an earlier one), by trial number: what pbt and branching studies are read from.
Result<PbtLinks> load_links(const db::Storage& storage, std::int64_t study_id);

/// The study's PBT view; nullopt when the study is not a pbt study.
Result<std::optional<PbtStudy>> load_pbt(const db::Storage& storage, const db::StudyRow& study);

/// `best` of a pbt study (and `--write-schedule`); the exit code.
int cmd_best_pbt(const BestArgs& a, const PbtStudy& pbt, const analysis::StudyData& study);

/// The replay study of the chain ending at trial `winner` (as JSON in the study-file schema).
nlohmann::json pbt_replay_study(const PbtStudy& pbt, const analysis::StudyData& study, std::int64_t winner);

/// The replay study `study` (study-file JSON, read relative to `from_dir`) made right for a
/// file written in `to_dir`: when the folders differ, `{study_dir}` in trial.command becomes
/// `from_dir` and a relative backend.template is made absolute, so the replay runs the same
/// program wherever `--write-schedule` put it. Unchanged when they are the same folder.
nlohmann::json relocate_study_file(nlohmann::json study, const std::filesystem::path& from_dir,
                                   const std::filesystem::path& to_dir);

/// `status`: trial number -> its link in brief ("m3 g2 <- 9 (exploit m1: base_lr x0.8)").
std::map<std::int64_t, std::string> pbt_status_cells(const PbtStudy& pbt);

}  // namespace dlsweep::orch
