// pbt_lineage_model.cpp — a pbt study's lineage for the report (pbt_lineage_model.hpp).
#include "report/pbt_lineage_model.hpp"

#include <map>

#include "analysis/ranking.hpp"
#include "common/pbt_link.hpp"
#include "common/trial_state.hpp"

namespace dlsweep::report {

using nlohmann::json;

analysis::StudyData pbt_last_generation(const analysis::StudyData& study, const json& pbt) {
  if (!pbt.is_object()) return study;
  const std::int64_t last = pbt.value("generations", std::int64_t{0}) - 1;
  std::map<std::int64_t, std::int64_t> generation;
  for (const auto& l : pbt["links"]) generation[l["trial"].get<std::int64_t>()] = l["generation"].get<std::int64_t>();
  analysis::StudyData out = study;
  std::erase_if(out.trials, [&](const analysis::TrialData& t) {
    auto g = generation.find(t.number);
    return g == generation.end() || g->second != last;
  });
  return out;
}

Result<json> pbt_lineage_model(const db::Storage& storage, const db::StudyRow& row, const StoredStudy& spec,
                               const analysis::StudyData* study) {
  if (!spec.pbt) return json(nullptr);
  auto trials = storage.list_trials(row.id);
  if (!trials) return std::unexpected(trials.error());
  auto events = storage.events(row.id);
  if (!events) return std::unexpected(events.error());
  std::map<std::int64_t, const db::TrialRow*> by_id;
  for (const auto& t : *trials) by_id[t.id] = &t;
  std::map<std::int64_t, const analysis::TrialData*> data;
  if (study)
    for (const auto& t : study->trials) data[t.number] = &t;
  PbtLinks links;
  for (const auto& e : *events) {
    if (e.kind != kPbtEventKind || !e.trial_id || !by_id.contains(*e.trial_id)) continue;
    const std::int64_t n = by_id[*e.trial_id]->number;
    if (auto l = PbtLink::from_json(n, json::parse(e.reason, nullptr, false))) links[n] = *l;
  }
  std::map<std::int64_t, const db::TrialRow*> by_number;
  for (const auto& t : *trials) by_number[t.number] = &t;
  json out_links = json::array();
  for (const auto& [n, l] : links) {
    const db::TrialRow* t = by_number[n];
    json params = json::object();
    for (const auto& k : spec.searched)
      if (t->params.is_object() && t->params.contains(k)) params[k] = t->params[k];
    auto d = data.find(n);
    out_links.push_back({{"trial", n},
                         {"member", l.member},
                         {"generation", l.generation},
                         {"start", l.start},
                         {"end", l.end},
                         {"parent", l.parent ? json(*l.parent) : json(nullptr)},
                         {"exploit_from", l.exploit_from ? json(*l.exploit_from) : json(nullptr)},
                         {"from_member", l.from_member ? json(*l.from_member) : json(nullptr)},
                         {"factors", l.factors},
                         {"resampled", l.resampled},
                         {"state", std::string(to_string(t->state))},
                         {"value", d == data.end() || !d->second->last_value() ? json(nullptr) : json(*d->second->last_value())},
                         {"params", params}});
  }
  json model{{"axis", spec.pbt->interval_by},
             {"population", spec.pbt->population},
             {"generations", spec.pbt->generations},
             {"links", out_links},
             {"winner", nullptr},
             {"chain", json::array()}};
  if (study) {
    const analysis::StudyData last = pbt_last_generation(*study, model);
    const analysis::Ranking r = analysis::rank(last, analysis::RankBy::value);
    if (const auto w = r.winner()) {
      std::int64_t n = last.trials[*w].number;
      model["winner"] = n;
      for (const PbtLink* l : pbt_chain(links, n)) model["chain"].push_back(l->number);
    }
  }
  return model;
}

}  // namespace dlsweep::report
