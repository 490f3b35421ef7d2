// pbt_lineage.cpp — PBT links as JSON and text, chains, and what follows from them
// (pbt_lineage.hpp).
#include "engine/pbt_lineage.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace dlsweep::orch {

using nlohmann::json;

namespace {

std::string number_text(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

}  // namespace

bool pbt_runs_to_end(const PbtLink& link, bool embedded, std::int64_t generations) {
  const bool branch = link.branch.is_object() && link.branch.value("role", "") == "branch";
  return embedded && !branch && link.generation + 1 >= generations;
}

std::optional<std::string> pbt_stop_at(const PbtLink& link, bool embedded, std::int64_t generations) {
  if (pbt_runs_to_end(link, embedded, generations)) return std::nullopt;
  return fmt::format("{}:{}", link.axis, link.end);
}

json pbt_trainer_params(const json& params, const std::vector<const PbtLink*>& chain,
                        const std::map<std::int64_t, json>& params_of, const std::vector<std::string>& searched,
                        std::int64_t generations) {
  json out = params;
  if (chain.empty()) return out;
  auto stages = [&](const char* key) {
    std::string s;
    for (const PbtLink* l : chain) {
      const json* p = &params;
      if (l != chain.back()) {
        auto it = params_of.find(l->number);
        if (it == params_of.end()) return std::string();
        p = &it->second;
      }
      auto v = p->find(key);
      if (v == p->end()) return std::string();
      s += fmt::format("{}{}:{}", s.empty() ? "" : ",", l->start, number_text(*v));
    }
    return s;
  };
  for (const auto& [param, string_key] : {std::pair{"batch_size", "batch_ramp"}, std::pair{"base_lr", "lr_schedule"}}) {
    if (std::find(searched.begin(), searched.end(), param) == searched.end()) continue;
    if (auto s = stages(param); !s.empty()) out[string_key] = s;
  }
  const PbtLink& last = *chain.back();
  if (!pbt_runs_to_end(last, /*embedded=*/true, generations)) out["stop_epoch"] = last.end;
  else out.erase("stop_epoch");
  return out;
}

json pbt_params_file(const json& params) {
  auto ramp = params.find("batch_ramp");
  if (ramp == params.end() || !ramp->is_string()) return params;
  const std::string& s = ramp->get_ref<const std::string&>();
  const auto colon = s.find(':'), comma = s.find(',');
  if (colon == std::string::npos) return params;
  try {
    json out = params;
    out["batch_size"] = std::stoll(s.substr(colon + 1, comma == std::string::npos ? std::string::npos : comma - colon - 1));
    return out;
  } catch (const std::exception&) {
    return params;  // not stages ("none", "smith"): as it is
  }
}

json pbt_schedule(const std::vector<const PbtLink*>& chain, const std::map<std::int64_t, json>& params_of,
                  const std::vector<std::string>& searched) {
  json out = json::array();
  for (const PbtLink* l : chain) {
    json p = json::object();
    if (auto it = params_of.find(l->number); it != params_of.end())
      for (const auto& k : searched)
        if (it->second.contains(k)) p[k] = it->second[k];
    out.push_back({{"start", l->start}, {"end", l->end}, {"axis", l->axis}, {"trial", l->number}, {"member", l->member},
                   {"exploit_from", l->exploit_from ? json(*l->exploit_from) : json(nullptr)}, {"params", p}});
  }
  return out;
}

}  // namespace dlsweep::orch
