// search_choice.hpp — which algorithm `search.algorithm: auto` used, and from which trial
// (search/auto_sampler.hpp decides; Sampler::chosen() says it). The engine records a `search`
// event each time the choice changes — its reason is to_json(): {"from": 250, "algorithm":
// "cmaes", "reason": "cmaes (numeric space, 250 trials >= 250)"} — and logs it; `best --explain`
// reads the events back and tells them in one line. Plain data, its JSON and its text; no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dlsweep {

/// The event kind of a search choice (events.kind).
inline constexpr const char* kSearchChoiceEventKind = "search";

struct SearchChoice {
  std::int64_t from = 0;  ///< the first trial number it proposed
  std::string algorithm;  ///< "gp" | "tpe" | "cmaes" | "nsga2"
  std::string reason;     ///< the sampler's words: "gp (numeric space, 0 trials < 250)"

  /// From chosen()'s words: the algorithm is the first word.
  static SearchChoice from_reason(std::int64_t from, const std::string& reason) {
    return {from, reason.substr(0, reason.find(' ')), reason};
  }
  nlohmann::json to_json() const { return {{"from", from}, {"algorithm", algorithm}, {"reason", reason}}; }
  /// From an event's reason; nullopt when it is not one (a damaged or foreign event is skipped).
  static std::optional<SearchChoice> from_json(const nlohmann::json& j) {
    if (!j.is_object() || !j.contains("from") || !j["from"].is_number_integer() || !j.contains("algorithm") ||
        !j["algorithm"].is_string() || j["algorithm"].get<std::string>().empty())
      return std::nullopt;
    SearchChoice c{j["from"].get<std::int64_t>(), j["algorithm"].get<std::string>(), ""};
    if (j.contains("reason") && j["reason"].is_string()) c.reason = j["reason"].get<std::string>();
    if (c.reason.empty()) c.reason = c.algorithm;
    return c;
  }
};

/// The choices in trial order with repeats merged: a resume records the choice in force again,
/// and a choice recorded twice for one trial (a retried proposal) keeps the later.
inline std::vector<SearchChoice> merge_search_choices(std::vector<SearchChoice> choices) {
  std::stable_sort(choices.begin(), choices.end(), [](const auto& a, const auto& b) { return a.from < b.from; });
  std::vector<SearchChoice> out;
  for (auto& c : choices) {
    if (!out.empty() && out.back().from == c.from) out.pop_back();
    if (!out.empty() && out.back().algorithm == c.algorithm) continue;
    out.push_back(std::move(c));
  }
  return out;
}

/// "search auto: gp (numeric space, 0 trials < 250) for trials 0-249, then cmaes (…) for trials from
/// 250 on"; `last` is the study's last trial number (the last choice's range ends there). Empty
/// when nothing was chosen (every algorithm but auto).
inline std::string search_choices_line(const std::vector<SearchChoice>& choices, std::optional<std::int64_t> last) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const auto& c = choices[i];
    const std::optional<std::int64_t> end =
        i + 1 < choices.size() ? std::optional<std::int64_t>(choices[i + 1].from - 1) : last;
    std::string range;
    if (end && *end == c.from)
      range = fmt::format("trial {}", c.from);
    else if (end && *end > c.from)
      range = fmt::format("trials {}-{}", c.from, *end);
    else
      range = fmt::format("trials from {} on", c.from);
    out += fmt::format("{}{} for {}", i == 0 ? "search auto: " : ", then ", c.reason, range);
  }
  return out;
}

}  // namespace dlsweep
