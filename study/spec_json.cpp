// spec_json.cpp — a StudySpec back to normalised JSON: to_json() writes the study in the
// input schema (space as an ordered list of one-key maps, since nlohmann::json sorts keys),
// so parse_study(to_json().dump(), json) gives an equal spec. What is stored in the database
// (studies.spec_json) and what `resume` rebuilds the study from. Only values that differ
// from their defaults are written for optional keys, so a stored study reads as written.
#include "study/spec.hpp"

#include "schedulers/backend_kinds.hpp"
#include "study/space.hpp"

namespace dlsweep::orch {

nlohmann::json StudySpec::backend_json() const {
  nlohmann::json b{{"kind", backend.kind}, {"max_concurrent", backend.max_concurrent}};
  if (backend.pending_warn_s != kDefaultPendingWarn) b["pending_warn"] = backend.pending_warn_s;
  // The kind writes back its own keys (only what the study changed).
  const sched::BackendKind* kind = sched::find_backend_kind(backend.kind);
  if (kind && kind->write_options) kind->write_options(backend.options, b);
  return b;
}

nlohmann::json StudySpec::to_json() const {
  using nlohmann::json;
  json trial_j = json::object();
  if (trial.embedded) trial_j["trainer"] = json::object();  // settings live in `fixed`
  else trial_j["command"] = trial.command;
  trial_j["ranks"] = trial.ranks;
  if (!trial.launcher.empty()) trial_j["launcher"] = trial.launcher;
  if (trial.timeout_s > 0) trial_j["timeout"] = trial.timeout_s;
  trial_j["max_retries"] = trial.max_retries;
  if (trial.fail_fast != kDefaultFailFast) trial_j["fail_fast"] = trial.fail_fast;
  if (!trial.unread_params.empty()) trial_j["unread_params"] = trial.unread_params;
  trial_j["env"] = trial.env;

  json objective_j = {{"metric", objective.metric}, {"mode", objective.mode}};
  if (objective.target) objective_j["target"] = *objective.target;
  if (objective.stop_at_target) objective_j["stop_at_target"] = true;
  if (objective.rank_final()) objective_j["rank_by"] = "final";  // written only when not the default
  if (multi_objective()) {  // several: a list, the first as above
    json list = json::array({objective_j});
    for (std::size_t i = 1; i < objectives.size(); ++i) {
      list.push_back({{"metric", objectives[i].metric}, {"mode", objectives[i].mode}});
      if (objectives[i].rank_final()) list.back()["rank_by"] = "final";
    }
    objective_j = std::move(list);
  }

  json search_j = search.options.is_object() ? search.options : json::object();
  search_j["algorithm"] = search.algorithm;
  search_j["seed"] = search.seed;
  if (search.trials > 0) search_j["trials"] = search.trials;
  if (!search.warm_start.empty()) {
    search_j["warm_start"] = json::array();
    for (const auto& w : search.warm_start) search_j["warm_start"].push_back({{"study", w.study}, {"db", w.db}});
  }
  json pruner_j = {{"by", pruner.by}, {"group_by", pruner.group_by}, {"warmup", pruner.warmup}};
  if (pruner.options.is_object())
    for (const auto& [k, v] : pruner.options.items()) pruner_j[k] = v;
  pruner_j["kind"] = pruner.kind;
  if (pruner.kind == "none" || pruner.kind == "median" || pruner.kind == "percentile")
    pruner_j["startup_trials"] = pruner.startup_trials;

  json space_j = json::array();
  for (const auto& d : space.dims) space_j.push_back({{d.name, dimension_to_json(d)}});

  json out = {{"name", name},
          {"description", description},
          {"backend", backend_json()},
          {"trial", trial_j},
          {"objective", objective_j},
          {"search", search_j},
          {"pruner", pruner_j},
          {"space", space_j},
          {"fixed", space.fixed},
          {"runs_dir", runs_dir}};
  if (!constraints.empty()) {
    json cs = json::array();
    for (const auto& c : constraints) {
      json j = json::object();
      if (c.reached_target) j["reached_target"] = true;
      else j["metric"] = c.metric;
      if (c.min) j["min"] = *c.min;
      if (c.max) j["max"] = *c.max;
      cs.push_back(std::move(j));
    }
    out["constraints"] = std::move(cs);
  }
  return out;
}

}  // namespace dlsweep::orch
