// pbt_link.cpp — a PBT link as JSON and text (pbt_link.hpp).
#include "common/pbt_link.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace dlsweep {

using nlohmann::json;

namespace {

std::optional<std::int64_t> opt_int(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

json opt_json(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::string pbt_explore_text(const json& factors, const json& resampled) {
  std::map<std::string, std::string> parts;
  for (const auto& [k, f] : factors.items()) parts[k] = fmt::format("{} x{:g}", k, f.get<double>());
  for (const auto& [k, v] : resampled.items())
    parts[k] = fmt::format("{} resampled to {}", k, v.is_number() ? fmt::format("{:g}", v.get<double>()) : v.dump());
  std::string out;
  for (const auto& [_, p] : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

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
    if (auto r = e->find("resampled"); r != e->end() && r->is_object()) l.resampled = *r;
  }
  if (auto b = j.find("branch"); b != j.end() && b->is_object()) l.branch = *b;
  return l;
}

json PbtLink::to_json() const {
  json j{{"member", member}, {"generation", generation}, {"axis", axis}, {"start", start}, {"end", end},
         {"parent", opt_json(parent)}, {"exploit", nullptr}};
  if (rank) j["rank"] = *rank;
  if (exploit_from) {
    j["exploit"] = {{"from", *exploit_from}, {"from_member", opt_json(from_member)}, {"factors", factors}};
    if (!resampled.empty()) j["exploit"]["resampled"] = resampled;  // as the sampler writes it
  }
  if (branch.is_object()) j["branch"] = branch;
  return j;
}

std::string PbtLink::describe() const {
  if (branch.is_object()) {
    const std::string span = fmt::format("{} [{:g}, {:g})", axis, start, end);
    if (branch.value("role", "") == "trunk")
      return fmt::format("trunk segment {}, {}{}", generation, span,
                         parent ? fmt::format(": continues trial {}", *parent) : std::string(": from scratch"));
    return fmt::format("branch at {} {:g}: batch {}, LR x{:g}, seed {}, {}{}", axis, start, branch.value("batch", 0),
                       branch.value("lr_factor", 1.0), branch.value("seed", 0), span,
                       parent ? fmt::format(", from trial {}", *parent) : std::string(", from scratch"));
  }
  std::string s = fmt::format("member {}, generation {}, {} [{:g}, {:g})", member, generation, axis, start, end);
  if (!parent) return s + ": from scratch";
  if (exploit_from) {
    const std::string explore = pbt_explore_text(factors, resampled);
    return s + fmt::format(": its previous trial ranked {}; exploits trial {} (member {}) and explores {}", rank.value_or(-1) + 1,
                           *exploit_from, from_member.value_or(-1), explore.empty() ? "nothing" : explore);
  }
  return s + fmt::format(": continues trial {} (ranked {})", *parent, rank.value_or(-1) + 1);
}

std::string PbtLink::brief() const {
  if (branch.is_object()) {
    if (branch.value("role", "") == "trunk") return fmt::format("trunk {:g}-{:g}", start, end);
    return fmt::format("@{:g} B{} x{:g} s{}", start, branch.value("batch", 0), branch.value("lr_factor", 1.0),
                       branch.value("seed", 0));
  }
  std::string s = fmt::format("m{} g{}", member, generation);
  if (!parent) return s;
  if (exploit_from) {
    const std::string explore = pbt_explore_text(factors, resampled);
    return s + fmt::format(" <- {} (exploit m{}{}{})", *exploit_from, from_member.value_or(-1), explore.empty() ? "" : ": ",
                           explore);
  }
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

}  // namespace dlsweep
