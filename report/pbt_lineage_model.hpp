// pbt_lineage_model.hpp — the report's view of a population-based training study (search:
// {algorithm: pbt}): every trial's link in its member's lineage (common/pbt_link.hpp, read
// back from the `pbt` events), what the lineage card (report/pbt_lineage.js) draws, and the
// winner as `dlsweep best` names it: the best trial of the last generation, by value, from
// the one ranking (analysis/ranking.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/study_data.hpp"
#include "common/result.hpp"
#include "common/stored_study.hpp"
#include "db/storage.hpp"

namespace dlsweep::report {

/// null when the study is not a pbt study (`spec`: the row's stored study, common/stored_study.hpp);
/// else {"axis", "population", "generations",
/// "winner" (trial number or null), "chain" (the winner's trials, generation 0 first),
/// "links": [{trial, member, generation, start, end, parent, exploit_from, from_member,
/// factors, resampled, state, value, params (the searched ones)}]} in trial order. `study`: the
/// analysis data of the same study (for the winner), or null when it could not be loaded.
Result<nlohmann::json> pbt_lineage_model(const db::Storage& storage, const db::StudyRow& row, const StoredStudy& spec,
                                         const analysis::StudyData* study);

/// The study's data restricted to the last generation of a pbt study (what `best` ranks),
/// given the lineage model; `study` itself when `pbt` is null.
analysis::StudyData pbt_last_generation(const analysis::StudyData& study, const nlohmann::json& pbt);

}  // namespace dlsweep::report
