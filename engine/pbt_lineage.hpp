// pbt_lineage.hpp — population-based training as the engine and the verbs see it: each
// trial's link in its member's lineage (what the pbt sampler decided: search/pbt_sampler.hpp),
// the `pbt` event it is recorded as, and what follows from a chain of links — the interval's
// end (DLSWEEP_STOP_AT), dlsweep-train's schedule params, the schedule `best` reports.
//
// In a PBT study a member's next interval is a new job: a new trial of the study, linked to
// its member and its parent (the trial whose checkpoint it starts from). The link is recorded
// when the trial is created, as an event of kind "pbt" whose reason is the link as JSON
// (to_json), in the trial's own transaction; `resume`, `status` and `best` read it back.
// Pure: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/pbt_link.hpp"

namespace dlsweep::orch {

using dlsweep::kPbtEventKind;
using dlsweep::PbtLink;

/// The environment variable that tells a trial where its interval ends: "<axis>:<value>",
/// e.g. "epoch:4" (positions count from the member's start, not the trial's).
inline constexpr const char* kEnvStopAt = "DLSWEEP_STOP_AT";

using dlsweep::PbtLinks;
using dlsweep::pbt_chain;

/// True when the trial at the end of a chain trains to its own end (no stop_epoch, no
/// DLSWEEP_STOP_AT): dlsweep-train's last generation of a pbt study, a branching study's last
/// trunk segment. A branch (link.branch with role "branch") never does.
bool pbt_runs_to_end(const PbtLink& link, bool embedded, std::int64_t generations);

/// What a trial is told about its interval's end: "<axis>:<end>", or nullopt when it runs
/// to its own end (dlsweep-train's last generation: `epochs` is the end).
std::optional<std::string> pbt_stop_at(const PbtLink& link, bool embedded, std::int64_t generations);

/// dlsweep-train's params for the trial at the end of `chain`: `params` plus batch_ramp
/// "0:B0,E1:B1,..." (when batch_size is searched), lr_schedule "0:L0,E1:L1,..." (when
/// base_lr is searched) — stage k starts at link k's start with its params' value — and
/// stop_epoch = the interval's end (absent on the last generation). `params_of(number)`:
/// the params of an earlier trial of the chain.
nlohmann::json pbt_trainer_params(const nlohmann::json& params, const std::vector<const PbtLink*>& chain,
                                  const std::map<std::int64_t, nlohmann::json>& params_of,
                                  const std::vector<std::string>& searched, std::int64_t generations);

/// params.json for dlsweep-train: `params` (the database's, whose batch_size is the current
/// interval's, what the sampler copies and `results` shows) with batch_size set to where its
/// batch_ramp starts, as dlsweep-train requires (the ramp carries the current batch).
nlohmann::json pbt_params_file(const nlohmann::json& params);

/// The schedule of a chain: one entry per interval {"start", "end", "trial", "member",
/// "params" (the searched ones), "exploit_from" (null or the donor trial)}.
nlohmann::json pbt_schedule(const std::vector<const PbtLink*>& chain,
                            const std::map<std::int64_t, nlohmann::json>& params_of,
                            const std::vector<std::string>& searched);

}  // namespace dlsweep::orch
