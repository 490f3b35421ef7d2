// pbt_lineage.cpp — PBT links as JSON and text, chains, and what follows from them
// (pbt_lineage.hpp).
#include "engine/pbt_lineage.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace dlsweep::orch {

using nlohmann::json;

namespace {

std::optional<std::int64_t> opt_int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

json opt_json(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

std::string factors_text(const json& factors) {
  std::string out;
  for (const auto& [k, f] : factors.items()) out += fmt::format("{}{} x{:g}", out.empty() ? "" : ", ", k, f.get<double>());
  return out;
}

std::string number_text(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

}  // namespace

std::optional<PbtLink> PbtLink::from_json(std::int64_t number, const json& j) {
  if (!j.is_object() || !j.contains("member") || !j.contains("generation")) return std::nullopt;
  PbtLink l;
  l.number = number;
  l.member = opt_int(j, "member").value_or(0);
  l.generation = opt_int(j, "generation").value_or(0);
  l.axis = j.value("axis", std::string("epoch"));
  l.start = j.value("start", 0.0);
  l.end = j.value("end", 0.0);
  l.parent = opt_int(j, "parent");
  l.rank = opt_int(j, "rank");
  if (auto e = j.find("exploit"); e != j.end() && e->is_object()) {
    l.exploit_from = opt_int(*e, "from");
    l.from_member = opt_int(*e, "from_member");
    if (auto f = e->find("factors"); f != e->end() && f->is_object()) l.factors = *f;
  }
  return l;
}

json PbtLink::to_json() const {
  json j{{"member", member}, {"generation", generation}, {"axis", axis}, {"start", start}, {"end", end},
         {"parent", opt_json(parent)}, {"exploit", nullptr}};
  if (rank) j["rank"] = *rank;
  if (exploit_from) j["exploit"] = {{"from", *exploit_from}, {"from_member", opt_json(from_member)}, {"factors", factors}};
  return j;
}

std::string PbtLink::describe() const {
  std::string s = fmt::format("member {}, generation {}, {} [{:g}, {:g})", member, generation, axis, start, end);
  if (!parent) return s + ": from scratch";
  if (exploit_from)
    return s + fmt::format(": its previous trial ranked {}; exploits trial {} (member {}) and explores {}", rank.value_or(-1) + 1,
                           *exploit_from, from_member.value_or(-1), factors.empty() ? "nothing" : factors_text(factors));
  return s + fmt::format(": continues trial {} (ranked {})", *parent, rank.value_or(-1) + 1);
}

std::string PbtLink::brief() const {
  std::string s = fmt::format("m{} g{}", member, generation);
  if (!parent) return s;
  if (exploit_from)
    return s + fmt::format(" <- {} (exploit m{}{}{})", *exploit_from, from_member.value_or(-1), factors.empty() ? "" : ": ",
                           factors_text(factors));
  return s + fmt::format(" <- {}", *parent);
}

std::vector<const PbtLink*> pbt_chain(const PbtLinks& links, std::int64_t number) {
  std::vector<const PbtLink*> chain;
  for (auto it = links.find(number); it != links.end();) {
    chain.push_back(&it->second);
    if (!it->second.parent || chain.size() > links.size()) break;
    it = links.find(*it->second.parent);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

std::optional<std::string> pbt_stop_at(const PbtLink& link, bool embedded, std::int64_t generations) {
  if (embedded && link.generation + 1 >= generations) return std::nullopt;
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
  if (last.generation + 1 < generations) out["stop_epoch"] = last.end;
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
                   {"exploit_from", opt_json(l->exploit_from)}, {"params", p}});
  }
  return out;
}

}  // namespace dlsweep::orch
